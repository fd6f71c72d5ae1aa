// Command walbench drives bench/cnpgi.sh's long-running clients: the ceiling (plain PUTs and
// GETs of already-compressed segments to the S3 server, through the same S3 client the plugin
// uses) and the plugin as CloudNativePG's instance manager calls it (one gRPC connection,
// WAL.Archive or WAL.Restore per segment). It prints one duration in nanoseconds per
// operation, then the run's wall time on the last line.
//
//	walbench ceiling -endpoint URL -bucket B -prefix P -op put|get -dir DIR [-parallel N] NAME...
//	walbench plugin -socket PATH -server S -store ST -op archive|restore -dir DIR [-parallel N] NAME...
//	walbench floor -op compress|decompress -dir DIR [-out DIR] NAME...
//
// floor is the work any gzip archiver adds to the ceiling: the segment (already in memory)
// gzipped the way the plugin does it (level 1, on every core); a .gz segment (already in
// memory) gunzipped into nothing, or with -out into the segment's file there, written as the
// plugin writes it (1 MiB writes, no fsync) — a restore must leave 16 MiB on disk where the
// ceiling's GET writes the 0.5 MiB it fetched.
//
// It is a client of the plugin and uses none of its code, so it lives outside internal/; and
// outside cmd/, whose every directory the launcher builds and starts as one of the suite's
// binaries and the images ship.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	walv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/wal/v1"
	"github.com/plinth-dev/plinth/libs/storage/compression"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "walbench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: walbench ceiling|plugin [flags] NAME...")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	var (
		endpoint = fs.String("endpoint", "", "S3 endpoint (ceiling)")
		bucket   = fs.String("bucket", "", "bucket (ceiling)")
		prefix   = fs.String("prefix", "ceiling", "key prefix (ceiling)")
		socket   = fs.String("socket", "", "plugin socket (plugin)")
		server   = fs.String("server", "", "server name (plugin)")
		store    = fs.String("store", "", "object store (plugin)")
		op       = fs.String("op", "", "put|get (ceiling), archive|restore (plugin)")
		dir      = fs.String("dir", "", "where the segments are read from or written to")
		out      = fs.String("out", "", "where floor -op decompress writes the segments (none: nowhere)")
		parallel = fs.Int("parallel", 1, "operations in flight")
	)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var do func(ctx context.Context, name string) error
	switch args[0] {
	case "ceiling":
		st, err := objectstore.NewS3(objectstore.S3Options{Endpoint: *endpoint, Bucket: *bucket, Prefix: *prefix, PathStyle: true,
			AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY")})
		if err != nil {
			return err
		}
		do = ceiling(st, *op, *dir)
	case "plugin":
		conn, err := grpc.NewClient("unix://"+*socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer conn.Close()
		def, _ := json.Marshal(map[string]any{"metadata": map[string]any{"name": *server},
			"spec": map[string]any{"plugins": []any{map[string]any{"name": "cnpgi.plinth.dev",
				"parameters": map[string]string{"serverName": *server, "objectStore": *store}}}}})
		do = plugin(walv1.NewWALClient(conn), def, *op, *dir)
	case "floor":
		do = floor(*op, *dir, *out)
	default:
		return fmt.Errorf("unknown mode %q", args[0])
	}
	return timeAll(do, fs.Args(), *parallel)
}

// ceiling is the least any archive or restore of a compressed segment costs: its bytes
// uploaded or downloaded, nothing else.
func ceiling(st objectstore.Store, op, dir string) func(context.Context, string) error {
	return func(ctx context.Context, name string) error {
		path := filepath.Join(dir, name)
		if op == "put" {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return st.Put(ctx, name, bytes.NewReader(data), objectstore.PutOptions{Size: int64(len(data))})
		}
		r, _, err := st.Get(ctx, name)
		if err != nil {
			return err
		}
		defer r.Close()
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	}
}

func floor(op, dir, out string) func(context.Context, string) error {
	return func(_ context.Context, name string) error {
		// The file is in the page cache: reading it is a memcpy next to the (de)compression.
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if op == "compress" {
			_, err := compression.Compress(compression.Gzip, data, runtime.GOMAXPROCS(0))
			return err
		}
		r, err := compression.Reader(compression.Gzip, bytes.NewReader(data), 1)
		if err != nil {
			return err
		}
		defer r.Close()
		if out == "" {
			_, err = io.Copy(io.Discard, r)
			return err
		}
		f, err := os.Create(filepath.Join(out, name))
		if err != nil {
			return err
		}
		if _, err := io.CopyBuffer(f, r, make([]byte, 1<<20)); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	}
}

func plugin(c walv1.WALClient, def []byte, op, dir string) func(context.Context, string) error {
	return func(ctx context.Context, name string) error {
		path := filepath.Join(dir, name)
		if op == "archive" {
			_, err := c.Archive(ctx, &walv1.WALArchiveRequest{ClusterDefinition: def, SourceFileName: path})
			return err
		}
		_, err := c.Restore(ctx, &walv1.WALRestoreRequest{ClusterDefinition: def, SourceWalName: name, DestinationFileName: path,
			Mode: walv1.WALRestoreRequest_MODE_RECOVERY})
		return err
	}
}

// timeAll runs do for every name, parallel at a time, and prints the durations.
func timeAll(do func(context.Context, string) error, names []string, parallel int) error {
	ctx := context.Background()
	durations := make([]time.Duration, len(names))
	errs := make([]error, len(names))
	work := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range max(1, parallel) {
		wg.Go(func() {
			for i := range work {
				t0 := time.Now()
				errs[i] = do(ctx, names[i])
				durations[i] = time.Since(t0)
			}
		})
	}
	for i := range names {
		work <- i
	}
	close(work)
	wg.Wait()
	wall := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, d := range durations {
		fmt.Println(d.Nanoseconds())
	}
	fmt.Println(wall.Nanoseconds())
	return nil
}
