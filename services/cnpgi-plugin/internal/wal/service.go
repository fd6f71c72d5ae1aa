// Package wal archives and restores PostgreSQL WAL files in object stores, in barman-cloud's
// layout (<prefix>/<server>/wals/<timeline+log>/<name>[.gz|.zst]), idempotently and never
// overwriting, and keeps the catalog of what was archived.
package wal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/objectstore"
)

// ArchivedFile is the catalog's record of one archived WAL file.
type ArchivedFile struct {
	Store, Server, Name string
	Kind                Kind
	Timeline            uint32
	// Size is the uncompressed size; StoredSize what the object store holds.
	Size, StoredSize int64
	Compression      Compression
	// SHA256 is of the uncompressed bytes: what "the same WAL file" means.
	SHA256 [32]byte
	// SystemID is the PostgreSQL system identifier from a segment's header; 0 when unknown.
	SystemID uint64
	// Key is the object key in the store.
	Key        string
	ArchivedAt time.Time
}

// Status summarises a server's archive.
type Status struct {
	// FirstWAL and LastWAL are the lowest and highest archived segment names ("" if none).
	FirstWAL, LastWAL string
	// Segments and Bytes count the archived segments and their stored size.
	Segments, Bytes int64
	// LastArchivedAt is when the newest file was archived (zero if none).
	LastArchivedAt time.Time
	// FirstRequired is the oldest WAL a backup still needs, as set by SetFirstRequired.
	FirstRequired string
}

// Catalog records archived files; the Postgres adapter lives in package catalog.
type Catalog interface {
	// File returns the record of name, and whether there is one.
	File(ctx context.Context, store, server, name string) (ArchivedFile, bool, error)
	// Record stores f unless a record of that name exists; it returns the stored record
	// and whether it was f.
	Record(ctx context.Context, f ArchivedFile) (ArchivedFile, bool, error)
	// Status summarises the archive of one server.
	Status(ctx context.Context, store, server string) (Status, error)
	// SetFirstRequired stores the oldest WAL file still needed by a backup.
	SetFirstRequired(ctx context.Context, store, server, name string) error
}

// Target is where a cluster's WAL goes: a store and the server name inside it.
type Target struct {
	Store  *objectstore.Named
	Server string
}

func (t Target) id() string { return t.Store.Name + "\x00" + t.Server }

// walsPrefix is the key prefix of all of a server's WAL files.
func walsPrefix(server string) string { return server + "/wals/" }

// baseKey is the object key of f without the compression extension.
func baseKey(server string, f FileName) string {
	return path.Join(server, "wals", f.HashDir(), f.Name)
}

// Options tune a Service.
type Options struct {
	// SpoolDir holds segments read ahead during recovery; emptied at start.
	SpoolDir string
	// SpoolTTL drops read-ahead segments nobody asked for (default 10 minutes).
	SpoolTTL time.Duration
	// Logger receives the service's logs.
	Logger *slog.Logger
}

// Service archives and restores WAL for any number of clusters.
type Service struct {
	catalog Catalog
	log     *slog.Logger
	ready   *readyShipped
	spool   *spool
	checked sync.Map // Target.id + system id → the empty-archive check passed once

	bg      context.Context // owns read-ahead downloads; Close cancels and waits
	stop    context.CancelFunc
	tasksMu sync.Mutex // orders starting tasks against Close
	closed  bool
	tasks   sync.WaitGroup
}

// NewService prepares the spool directory and returns a Service; Close stops its
// background downloads.
func NewService(c Catalog, o Options) (*Service, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SpoolTTL == 0 {
		o.SpoolTTL = 10 * time.Minute
	}
	if o.SpoolDir == "" {
		return nil, errors.New("wal: a spool directory is required")
	}
	// Leftovers of an earlier process may belong to a timeline that no longer exists.
	if err := os.RemoveAll(o.SpoolDir); err != nil {
		return nil, fmt.Errorf("wal: clear spool %s: %w", o.SpoolDir, err)
	}
	if err := os.MkdirAll(o.SpoolDir, 0o700); err != nil {
		return nil, fmt.Errorf("wal: create spool %s: %w", o.SpoolDir, err)
	}
	bg, stop := context.WithCancel(context.Background())
	s := &Service{catalog: c, log: o.Logger, ready: newReadyShipped(), bg: bg, stop: stop}
	s.spool = newSpool(o.SpoolDir, o.SpoolTTL)
	return s, nil
}

// Close cancels read-ahead downloads and waits for them.
func (s *Service) Close() {
	s.tasksMu.Lock()
	s.closed = true
	s.tasksMu.Unlock()
	s.stop()
	s.tasks.Wait()
}

// goTask runs fn in the background unless the service is closing; it reports whether fn
// was started.
func (s *Service) goTask(fn func()) bool {
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	if s.closed {
		return false
	}
	s.tasks.Go(fn)
	return true
}

// Status summarises the target's archive from the catalog.
func (s *Service) Status(ctx context.Context, t Target) (Status, error) {
	return s.catalog.Status(ctx, t.Store.Name, t.Server)
}

// SetFirstRequired records the oldest segment a backup of t still needs (retention keeps
// everything from there on).
func (s *Service) SetFirstRequired(ctx context.Context, t Target, name string) error {
	f, err := ParseFileName(name)
	if err != nil || f.Kind != KindSegment {
		return invalid("first_required_wal", "%q is not a WAL segment name (24 hex digits)", name)
	}
	return s.catalog.SetFirstRequired(ctx, t.Store.Name, t.Server, name)
}
