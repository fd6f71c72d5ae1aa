// Package storetest is the conformance suite every objectstore.Store backend passes: what
// the WAL and backup code relies on (conditional puts, ordered listings, ranges, streaming
// puts that leave nothing behind when they fail) must hold for each of them alike.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// Suite runs every conformance check, each against a fresh, empty store from open.
func Suite(t *testing.T, open func(t *testing.T) objectstore.Store) {
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, open(t)) })
	t.Run("IfAbsent", func(t *testing.T) { testIfAbsent(t, open(t)) })
	t.Run("ConcurrentIfAbsent", func(t *testing.T) { testConcurrentIfAbsent(t, open(t)) })
	t.Run("List", func(t *testing.T) { testList(t, open(t)) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, open(t)) })
	t.Run("BadKeys", func(t *testing.T) { testBadKeys(t, open(t)) })
	t.Run("LargeUnsized", func(t *testing.T) { testLargeUnsized(t, open(t)) })
	t.Run("FailedPutLeavesNothing", func(t *testing.T) { testFailedPut(t, open(t)) })
	t.Run("Range", func(t *testing.T) { testRange(t, open(t)) })
	t.Run("PutFunc", func(t *testing.T) { testPutFunc(t, open(t)) })
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func put(t *testing.T, st objectstore.Store, key string, data []byte, ifAbsent bool) error {
	t.Helper()
	return st.Put(ctxT(t), key, bytes.NewReader(data), objectstore.PutOptions{Size: int64(len(data)), IfAbsent: ifAbsent})
}

func get(t *testing.T, st objectstore.Store, key string) []byte {
	t.Helper()
	r, info, err := st.Get(ctxT(t), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if info.Key != key || info.Size != int64(len(b)) {
		t.Fatalf("get %s: info %+v for %d bytes", key, info, len(b))
	}
	return b
}

func testRoundTrip(t *testing.T, st objectstore.Store) {
	data := []byte("segment bytes \x00\x01\x02")
	if err := put(t, st, "srv/wals/0000000100000000/000000010000000000000001.gz", data, false); err != nil {
		t.Fatal(err)
	}
	if got := get(t, st, "srv/wals/0000000100000000/000000010000000000000001.gz"); !bytes.Equal(got, data) {
		t.Fatalf("read back %q", got)
	}
	info, err := st.Stat(ctxT(t), "srv/wals/0000000100000000/000000010000000000000001.gz")
	if err != nil || info.Size != int64(len(data)) || time.Since(info.ModTime) > time.Hour {
		t.Fatalf("stat: %+v %v", info, err)
	}
	if _, _, err := st.Get(ctxT(t), "srv/missing"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("get missing: %v, want ErrNotFound", err)
	}
	if _, err := st.Stat(ctxT(t), "srv/missing"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("stat missing: %v, want ErrNotFound", err)
	}
	if _, err := st.Stat(ctxT(t), "srv"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("stat of a key prefix (a directory in POSIX): %v, want ErrNotFound", err)
	}
	if err := put(t, st, "srv/wals/0000000100000000/000000010000000000000001.gz", []byte("v2"), false); err != nil {
		t.Fatal(err)
	}
	if got := get(t, st, "srv/wals/0000000100000000/000000010000000000000001.gz"); string(got) != "v2" {
		t.Fatalf("a plain Put must replace: %q", got)
	}
}

func testIfAbsent(t *testing.T, st objectstore.Store) {
	if err := put(t, st, "k", []byte("first"), true); err != nil {
		t.Fatal(err)
	}
	if err := put(t, st, "k", []byte("second"), true); !errors.Is(err, objectstore.ErrExists) {
		t.Fatalf("IfAbsent over an object: %v, want ErrExists", err)
	}
	if got := get(t, st, "k"); string(got) != "first" {
		t.Fatalf("object replaced: %q", got)
	}
}

func testConcurrentIfAbsent(t *testing.T, st objectstore.Store) {
	var won, lost atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			err := put(t, st, "race/key", []byte{byte('a' + i)}, true)
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, objectstore.ErrExists):
				lost.Add(1)
			default:
				t.Errorf("writer %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 || lost.Load() != 7 {
		t.Fatalf("%d writers won, %d lost; want exactly one winner", won.Load(), lost.Load())
	}
}

func testList(t *testing.T, st objectstore.Store) {
	for _, k := range []string{"z", "a/b/c2", "a/b.x", "a/b/c1", "a/bz", "a/a"} {
		if err := put(t, st, k, []byte(k), false); err != nil {
			t.Fatal(err)
		}
	}
	list := func(prefix string, limit int) []string {
		var keys []string
		for info, err := range st.List(ctxT(t), prefix) {
			if err != nil {
				t.Fatalf("list %q: %v", prefix, err)
			}
			if info.Size != int64(len(info.Key)) {
				t.Errorf("%s: size %d", info.Key, info.Size)
			}
			keys = append(keys, info.Key)
			if len(keys) == limit {
				break
			}
		}
		return keys
	}
	cases := []struct {
		prefix string
		limit  int
		want   []string
	}{
		{"a/b", 0, []string{"a/b.x", "a/b/c1", "a/b/c2", "a/bz"}}, // S3 byte order: '.' < '/' < 'z'
		{"a/b/", 0, []string{"a/b/c1", "a/b/c2"}},
		{"", 0, []string{"a/a", "a/b.x", "a/b/c1", "a/b/c2", "a/bz", "z"}},
		{"", 2, []string{"a/a", "a/b.x"}},
		{"nothing/", 0, nil},
		{"a/b/c1", 0, []string{"a/b/c1"}},
	}
	for _, c := range cases {
		if got := list(c.prefix, c.limit); !slices.Equal(got, c.want) {
			t.Errorf("List(%q) = %v, want %v", c.prefix, got, c.want)
		}
	}
}

func testDelete(t *testing.T, st objectstore.Store) {
	if err := put(t, st, "d/x", []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctxT(t), "d/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctxT(t), "d/x"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := st.Delete(ctxT(t), "d/x"); err != nil {
		t.Fatalf("deleting a missing object must succeed: %v", err)
	}
}

func testBadKeys(t *testing.T, st objectstore.Store) {
	for _, k := range []string{"", "/abs", "a//b", "../up", "a/../../b", "a/./b", "trailing/", "nul\x00", "\xff\xfe", strings.Repeat("k", 1025)} {
		if err := put(t, st, k, []byte("x"), false); err == nil {
			t.Errorf("Put(%q) accepted", k)
		}
		_, err := st.Stat(ctxT(t), k)
		if !errors.Is(err, objectstore.ErrInvalidKey) {
			t.Errorf("Stat(%.20q) = %v, want ErrInvalidKey", k, err)
		} else if len(err.Error()) > 200 {
			t.Errorf("Stat of a %d-byte key: the error repeats it (%d bytes)", len(k), len(err.Error()))
		}
	}
}

func testRange(t *testing.T, st objectstore.Store) {
	data := []byte("0123456789abcdefghij")
	if err := put(t, st, "r/obj", data, false); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		off, n int64
		want   string
	}{{0, -1, string(data)}, {5, 3, "567"}, {18, -1, "ij"}, {18, 10, "ij"}, {0, 0, ""}, {20, -1, ""}, {25, 4, ""}}
	for _, c := range cases {
		r, info, err := st.GetRange(ctxT(t), "r/obj", c.off, c.n)
		if err != nil {
			t.Fatalf("GetRange(%d, %d): %v", c.off, c.n, err)
		}
		got, err := io.ReadAll(r)
		_ = r.Close()
		if err != nil || string(got) != c.want || info.Size != int64(len(data)) {
			t.Errorf("GetRange(%d, %d) = %q (object size %d) %v, want %q", c.off, c.n, got, info.Size, err, c.want)
		}
	}
	if _, _, err := st.GetRange(ctxT(t), "r/missing", 0, 1); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("range of a missing object: %v", err)
	}
	if _, _, err := st.GetRange(ctxT(t), "r/obj", -1, 1); err == nil {
		t.Fatal("a negative offset was accepted")
	}
}

// testLargeUnsized streams 12 MiB of unknown size: S3 goes multipart (5 MiB parts) and the
// conditional write must hold on CompleteMultipartUpload too.
func testLargeUnsized(t *testing.T, st objectstore.Store) {
	data := make([]byte, 12<<20+12345)
	_, _ = rand.Read(data)
	unsized := func() io.Reader { return io.MultiReader(bytes.NewReader(data[:1<<20]), bytes.NewReader(data[1<<20:])) }
	if err := st.Put(ctxT(t), "big/object", unsized(), objectstore.PutOptions{Size: -1, IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, st, "big/object"); !bytes.Equal(got, data) {
		t.Fatalf("large object differs (%d bytes back)", len(got))
	}
	err := st.Put(ctxT(t), "big/object", unsized(), objectstore.PutOptions{Size: -1, IfAbsent: true})
	if !errors.Is(err, objectstore.ErrExists) {
		t.Fatalf("multipart IfAbsent over an object: %v, want ErrExists", err)
	}
}

// failingReader yields some bytes, then an error, like a source file that vanished.
type failingReader struct{ n int }

func (f *failingReader) Read(b []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("source vanished")
	}
	n := min(len(b), f.n)
	f.n -= n
	return n, nil
}

func testFailedPut(t *testing.T, st objectstore.Store) {
	err := st.Put(ctxT(t), "f/obj", &failingReader{n: 100}, objectstore.PutOptions{Size: -1})
	if err == nil {
		t.Fatal("a failing reader must fail the Put")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.Put(ctx, "f/canceled", strings.NewReader("x"), objectstore.PutOptions{Size: -1}); err == nil {
		t.Fatal("a canceled context must fail the Put")
	}
	for info, err := range st.List(ctxT(t), "") {
		if err != nil {
			t.Fatal(err)
		}
		t.Errorf("object %q left behind by a failed Put", info.Key)
	}
	if p, ok := st.(*objectstore.POSIX); ok {
		entries, _ := os.ReadDir(filepath.Join(p.Root(), "f"))
		for _, e := range entries {
			t.Errorf("temporary file %q left behind", e.Name())
		}
	}
}

func testPutFunc(t *testing.T, st objectstore.Store) {
	data := make([]byte, 7<<20+3)
	_, _ = rand.Read(data)
	n, err := objectstore.PutFunc(ctxT(t), st, "pf/ok", objectstore.PutOptions{Size: -1, IfAbsent: true}, func(w io.Writer) error {
		for p := data; len(p) > 0; p = p[min(len(p), 100000):] {
			if _, err := w.Write(p[:min(len(p), 100000)]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || n != int64(len(data)) {
		t.Fatalf("PutFunc: %d %v", n, err)
	}
	if !bytes.Equal(get(t, st, "pf/ok"), data) {
		t.Fatal("PutFunc stored other bytes")
	}
	boom := errors.New("source failed")
	_, err = objectstore.PutFunc(ctxT(t), st, "pf/failed", objectstore.PutOptions{Size: -1}, func(w io.Writer) error {
		_, _ = w.Write(data[:6<<20])
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("a failing writer: %v", err)
	}
	if _, err := st.Stat(ctxT(t), "pf/failed"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("a failed PutFunc left an object: %v", err)
	}
	_, err = objectstore.PutFunc(ctxT(t), st, "pf/ok", objectstore.PutOptions{Size: -1, IfAbsent: true}, func(w io.Writer) error {
		_, err := w.Write(data[:10])
		return err
	})
	if !errors.Is(err, objectstore.ErrExists) {
		t.Fatalf("PutFunc over an object with IfAbsent: %v", err)
	}
}
