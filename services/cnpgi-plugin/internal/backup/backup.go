// Package backup takes online physical base backups of PostgreSQL into object stores, in
// barman-cloud's layout and backup.info format, keeps their catalog, and applies retention
// policies to backups and the WAL archive. The roles share it: the instance role's Backup
// service takes backups (take.go), the restore role lists and unpacks them (List,
// OpenArchive), the operator role checks retention policies (ParsePolicySpec).
package backup

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// Record is the catalog's row for one base backup.
type Record struct {
	Store, Server, ID, Name string
	Status                  Status
	Timeline                uint32
	BeginWAL, EndWAL        string
	// BeginLSN and EndLSN are 0 when unknown (a backup that failed before they were known).
	BeginLSN, EndLSN   LSN
	BeginTime, EndTime time.Time
	// Size is the tar bytes before compression; StoredSize what the store holds.
	Size, StoredSize int64
	Compression      Compression
	SystemID         uint64
	PGVersion        int
	Instance         string
	Error            string
}

// Catalog stores backup records and prunes the WAL catalog; the Postgres adapter lives in
// package catalog.
type Catalog interface {
	// SaveBackup inserts or replaces the record of r.ID.
	SaveBackup(ctx context.Context, r Record) error
	// FinishBackup saves f.Record and adds f.Event to the outbox in the same transaction;
	// what they are, Finished decides.
	FinishBackup(ctx context.Context, f Finish) error
	// Backups lists a server's backups, oldest first.
	Backups(ctx context.Context, store, server string) ([]Record, error)
	// DeleteBackup removes a record; a missing one is not an error.
	DeleteBackup(ctx context.Context, store, server, id string) error
	// FirstRequiredWAL is what WAL.SetFirstRequired stored for the server, or "".
	FirstRequiredWAL(ctx context.Context, store, server string) (string, error)
	// DeleteWAL removes the records of archived WAL files.
	DeleteWAL(ctx context.Context, store, server string, names []string) error
}

// Options configure a Service.
type Options struct {
	// InstanceURL is how the plugin connects to the PostgreSQL it backs up (a libpq URL or
	// key=value string); the plugin must also be able to read that instance's PGDATA.
	InstanceURL string
	// Logger receives the service's logs.
	Logger *slog.Logger
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Service takes base backups and applies retention.
type Service struct {
	catalog     Catalog
	instanceURL string
	log         *slog.Logger
	now         func() time.Time
	// takeMu runs one backup at a time: backup ids are start times in seconds, and one
	// instance is all a plugin process backs up.
	takeMu sync.Mutex
}

// NewService returns a Service over the catalog.
func NewService(c Catalog, o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{catalog: c, instanceURL: o.InstanceURL, log: o.Logger, now: o.Now}
}

// Target is where backups go: a store and the server name inside it (the WAL archive's).
type Target = wal.Target
