// Package wal archives and restores PostgreSQL WAL files in object stores, in barman-cloud's
// layout (<prefix>/<server>/wals/<timeline+log>/<name>[.gz|.zst|...]), idempotently and never
// overwriting, and keeps the catalog of what was archived. The roles share it: the instance
// role's WAL service archives and restores through it (archive.go, restore.go), the restore
// role checks a recovery source's WAL with Find, and the catalog stores its ArchivedFile.
package wal

import (
	"github.com/plinth-dev/plinth/libs/platform/input"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
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
	// CatalogSegments counts the segments the catalog knows (Segments counts the store's).
	CatalogSegments int64
	// CatalogKnown is false when the catalog did not answer: FirstRequired and
	// CatalogSegments are then unknown.
	CatalogKnown bool
	// CatalogWaiting counts files archived while the catalog was down, not yet recorded.
	CatalogWaiting int
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
	Store  *stores.Named
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
	// BufferLimit: files up to this size are compressed in memory and sent with one
	// request; larger ones are streamed (default 64 MiB).
	BufferLimit int64
}

// Service archives and restores WAL for any number of clusters.
type Service struct {
	catalog     *behind // the catalog, never waited on (behind.go)
	log         *slog.Logger
	bufferLimit int64
	ready       *readyShipped
	spool       *spool
	checked     sync.Map // Target.id + system id → the empty-archive check passed once

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
	if o.BufferLimit == 0 {
		o.BufferLimit = defaultBufferLimit
	}
	if o.SpoolDir == "" {
		return nil, errors.New("wal: a spool directory is required")
	}
	// Leftovers of an earlier process may belong to a timeline that no longer exists.
	if err := emptyDir(o.SpoolDir); err != nil {
		return nil, fmt.Errorf("wal: empty the spool %s: %w", o.SpoolDir, err)
	}
	bg, stop := context.WithCancel(context.Background())
	s := &Service{catalog: newBehind(c, o.Logger), log: o.Logger, bufferLimit: o.BufferLimit, ready: newReadyShipped(), bg: bg, stop: stop}
	s.spool = newSpool(o.SpoolDir, o.SpoolTTL)
	s.goTask(func() { s.catalog.run(bg) })
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

// Status summarises the target's archive as the store holds it (one listing), so that WAL
// that barman or an earlier installation archived counts as well as the catalog's; the
// catalog adds the first required WAL and its own segment count when it answers
// (CatalogKnown).
func (s *Service) Status(ctx context.Context, t Target) (Status, error) {
	cat, known := s.catalog.status(ctx, t.Store.Name, t.Server)
	st := Status{FirstRequired: cat.FirstRequired, CatalogSegments: cat.Segments, CatalogKnown: known,
		CatalogWaiting: s.catalog.Waiting()}
	for info, err := range t.Store.Store.List(ctx, walsPrefix(t.Server)) {
		if err != nil {
			return Status{}, err
		}
		fn, _, ok := ParseObjectKey(t.Server, info.Key)
		if !ok {
			continue
		}
		st.Bytes += info.Size
		if info.ModTime.After(st.LastArchivedAt) {
			st.LastArchivedAt = info.ModTime
		}
		if fn.Kind != KindSegment {
			continue
		}
		st.Segments++
		if st.FirstWAL == "" || fn.Name < st.FirstWAL {
			st.FirstWAL = fn.Name
		}
		if fn.Name > st.LastWAL {
			st.LastWAL = fn.Name
		}
	}
	return st, nil
}

// SetFirstRequired records the oldest segment a backup of t still needs (retention keeps
// everything from there on).
func (s *Service) SetFirstRequired(ctx context.Context, t Target, name string) error {
	f, err := ParseFileName(name)
	if err != nil || f.Kind != KindSegment {
		return invalid("first_required_wal", "%s is not a WAL segment name (24 hex digits)", input.Quote(name))
	}
	s.catalog.setFirstRequired(ctx, t.Store.Name, t.Server, name)
	return nil
}
