package wal

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// readyShipped remembers the files archived ahead of PostgreSQL's own calls, so that those
// calls return at once. Memory only: after a restart the call takes the normal path, which
// finds the file in the catalog with the same bytes and succeeds just the same.
type readyShipped struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// shippedTTL bounds the memory: PostgreSQL asks for a ready file within seconds.
const shippedTTL = 24 * time.Hour

func newReadyShipped() *readyShipped { return &readyShipped{m: map[string]time.Time{}} }

func shippedKey(t Target, name string) string { return t.id() + "\x00" + name }

func (r *readyShipped) add(t Target, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for k, at := range r.m {
		if now.Sub(at) > shippedTTL {
			delete(r.m, k)
		}
	}
	r.m[shippedKey(t, name)] = now
}

// take reports whether name was archived ahead, forgetting it.
func (r *readyShipped) take(t Target, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := shippedKey(t, name)
	_, ok := r.m[k]
	delete(r.m, k)
	return ok
}

func (r *readyShipped) has(t Target, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.m[shippedKey(t, name)]
	return ok
}

// siblings lists up to max files with a .ready marker in archive_status beside the source
// (in dir, pg_wal with links resolved), oldest first (PostgreSQL's own order), skipping the
// source and files already shipped. Each is validated like the requested file; one that
// fails is left for PostgreSQL's own call, which reports why.
func (r *readyShipped) siblings(t Target, dd dataDirs, dir, skip string, max int) []source {
	if max <= 0 {
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(dir, "archive_status"))
	if err != nil {
		return nil // not a PostgreSQL pg_wal, or unreadable: archive just the requested file
	}
	var out []source
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".ready")
		if !ok || name == skip || r.has(t, name) {
			continue
		}
		fn, err := ParseFileName(name)
		if err != nil {
			continue
		}
		src, err := dd.validated("source_file_name", filepath.Join(dir, name), fn)
		if err != nil {
			continue
		}
		out = append(out, src)
		if len(out) == max {
			break
		}
	}
	return out
}
