// Package gcstest runs a real Google Cloud Storage emulator, fake-gcs-server (the one
// barman-cloud's own CI uses), for tests. `make tools-s3` builds the pinned binary into bin/;
// tests skip loudly without it, and fail under PLINTH_TEST_STRICT=1.
package gcstest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// Server is one running fake-gcs-server.
type Server struct {
	// Endpoint is http://127.0.0.1:PORT: the JSON API is under /storage/v1/, uploads under
	// /upload/storage/v1/.
	Endpoint string
	// Host is 127.0.0.1:PORT, the form STORAGE_EMULATOR_HOST takes.
	Host string
	// Dir is the filesystem backend's root: a directory per bucket.
	Dir string
}

// Binary finds fake-gcs-server: $PLINTH_FAKE_GCS_SERVER, the repository's
// bin/fake-gcs-server, or PATH.
func Binary() (string, error) {
	if p := os.Getenv("PLINTH_FAKE_GCS_SERVER"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("PLINTH_FAKE_GCS_SERVER: %w", err)
		}
		return p, nil
	}
	if dir, err := os.Getwd(); err == nil {
		for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
				p := filepath.Join(dir, "bin", "fake-gcs-server")
				if _, err := os.Stat(p); err == nil {
					return p, nil
				}
				break
			}
		}
	}
	p, err := exec.LookPath("fake-gcs-server")
	if err != nil {
		return "", fmt.Errorf("fake-gcs-server not found (run `make tools-s3`, or set PLINTH_FAKE_GCS_SERVER)")
	}
	return p, nil
}

// Start runs fake-gcs-server over plain HTTP on a free 127.0.0.1 port, its filesystem
// backend in a fresh directory, until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	s := &Server{Dir: t.TempDir()}
	for attempt := 0; ; attempt++ {
		addr := freeAddr(t)
		_, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(bin, "-scheme", "http", "-host", "127.0.0.1", "-port", port,
			"-backend", "filesystem", "-filesystem-root", s.Dir,
			// Upload URLs it hands out (resumable sessions) must point back at this port.
			"-external-url", "http://"+addr, "-public-host", addr, "-log-level", "warn")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start fake-gcs-server: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		// A deadline, not a measure: well under a second here.
		if waitListening(addr, exited, 60*time.Second) {
			t.Cleanup(func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
					_ = cmd.Process.Kill()
					<-exited
				}
			})
			s.Endpoint, s.Host = "http://"+addr, addr
			return s
		}
		_ = cmd.Process.Kill()
		<-exited
		if attempt == 2 {
			t.Fatalf("fake-gcs-server did not start on %s:\n%s", addr, out.String())
		}
	}
}

// Bucket creates a bucket with a name unique to the test and returns it.
func (s *Server) Bucket(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "b"), "_", "-"))
	if len(name) > 63 {
		name = name[len(name)-63:]
	}
	name = strings.Trim(name, "-")
	body, _ := json.Marshal(map[string]string{"name": name})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Endpoint+"/storage/v1/b?project=plinth-test", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		t.Fatalf("create bucket %s: %s %s", name, res.Status, msg)
	}
	return name
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func waitListening(addr string, exited <-chan struct{}, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			_ = c.Close()
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
