package gcs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/storage/gcstest"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/gcs"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/storetest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// open builds a store on srv with the smallest chunk GCS accepts, so that the suite's
// multi-MiB unsized puts are resumable uploads of many chunks.
func open(t *testing.T, srv *gcstest.Server, bucket, prefix string) *gcs.Store {
	t.Helper()
	st, err := gcs.New(ctxT(t), gcs.Options{Endpoint: srv.Endpoint, Bucket: bucket, Prefix: prefix, ChunkSize: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// TestConformance runs the suite every store passes against a real fake-gcs-server.
func TestConformance(t *testing.T) {
	srv := gcstest.Start(t)
	factory := func(prefix string) func(t *testing.T) objectstore.Store {
		return func(t *testing.T) objectstore.Store { return open(t, srv, srv.Bucket(t), prefix) }
	}
	storetest.Suite(t, factory(""))
	t.Run("with-prefix", func(t *testing.T) { storetest.Suite(t, factory("clusters/prod")) })
}

// TestMissingBucket: every request names the configuration error, not a missing object.
func TestMissingBucket(t *testing.T) {
	srv := gcstest.Start(t)
	st := open(t, srv, "no-such-bucket", "p")
	ctx := ctxT(t)
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, objectstore.ErrBucketMissing) {
			t.Errorf("%s: %v, want ErrBucketMissing", op, err)
		}
	}
	check("put", st.Put(ctx, "k", strings.NewReader("x"), objectstore.PutOptions{Size: 1}))
	check("put unsized", st.Put(ctx, "k", strings.NewReader(strings.Repeat("x", 600<<10)), objectstore.PutOptions{Size: -1}))
	_, _, err := st.Get(ctx, "k")
	check("get", err)
	_, err = st.Stat(ctx, "k")
	check("stat", err)
	check("delete", st.Delete(ctx, "k"))
	for _, err := range st.List(ctx, "") {
		check("list", err)
	}
	// A missing object in an existing bucket stays ErrNotFound.
	st = open(t, srv, srv.Bucket(t), "")
	if _, err := st.Stat(ctx, "k"); !errors.Is(err, objectstore.ErrNotFound) || errors.Is(err, objectstore.ErrBucketMissing) {
		t.Errorf("stat of a missing object: %v", err)
	}
}

// TestCanceledContext: the caller's context error comes back as itself.
func TestCanceledContext(t *testing.T) {
	srv := gcstest.Start(t)
	st := open(t, srv, srv.Bucket(t), "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.Put(ctx, "k", strings.NewReader("x"), objectstore.PutOptions{Size: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("put: %v", err)
	}
	if _, err := st.Stat(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("stat: %v", err)
	}
	if err := st.Put(ctxT(t), "short", strings.NewReader("x"), objectstore.PutOptions{Size: 5}); err == nil {
		t.Error("a reader shorter than the announced size was stored")
	}
	if _, err := st.Stat(ctxT(t), "short"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("a short put left an object: %v", err)
	}
}
