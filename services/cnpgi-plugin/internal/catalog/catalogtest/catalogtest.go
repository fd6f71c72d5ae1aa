// Package catalogtest is the conformance suite of the plugin's catalog (after Waypoint's
// statetest): every interface the plugin declares over it — wal.Catalog, backup.Catalog,
// rebuild.Catalog, events.Queue, and the summaries the Operator, Metrics and CatalogService
// read — as a table of behaviours, each run twice: once on one catalog, once reopening it
// mid-test, so that nothing a behaviour relies on lives only in a process.
package catalogtest

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/libs/storage/compression"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/history"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/rebuild"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/events"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// Catalog is every interface a package of the plugin declares over the catalog's writes.
type Catalog interface {
	wal.Catalog
	backup.Catalog
	rebuild.Catalog
	events.Queue
}

// History is what the Operator's status (operator.History), Metrics
// (instance.ArchiveSummaries) and the CatalogService (instance.CatalogReader) read of a
// server's archive.
type History interface {
	Summary(ctx context.Context, store, server string) (history.Summary, error)
	Servers(ctx context.Context, store string) ([]history.Server, error)
	Find(ctx context.Context, store, server string) (history.Summary, bool, error)
}

// Opened is a catalog under test: its writes, its summaries, and the events it has written
// to the outbox (oldest first), which the suite checks are exactly those it was given.
type Opened struct {
	Catalog Catalog
	History History
	Outbox  func(ctx context.Context) ([]proto.Message, error)
}

// Factory returns an empty catalog for one test; it cleans up after itself via t.Cleanup.
type Factory = func(t *testing.T) *Opened

// Reopen returns a catalog on the same data as o, as a restarted plugin (or another one
// sharing the database) would have.
type Reopen = func(t *testing.T, o *Opened) *Opened

// StoreTest is one behaviour's run against one catalog.
type StoreTest = testenv.StoreRun[*Opened]

type behaviour = testenv.Case[*StoreTest]

// Run runs every behaviour against catalogs from factory, plain and with a restart.
func Run(t *testing.T, factory Factory, reopen Reopen) {
	var all []behaviour
	for _, group := range [][]behaviour{walBehaviours(), backupBehaviours(), queueBehaviours(), historyBehaviours()} {
		all = append(all, group...)
	}
	testenv.RunStoreCases(t, all, factory, reopen)
}

// t0 is the suite's epoch, in whole seconds (what every catalog keeps exactly).
var t0 = time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)

// file is an archived file of server in store main, archived n seconds after t0.
func file(server, name string, n int) wal.ArchivedFile {
	kind := wal.KindSegment
	switch {
	case len(name) == 16:
		kind = wal.KindHistory
	case len(name) > 24:
		kind = wal.KindBackup
	}
	return wal.ArchivedFile{Store: "main", Server: server, Name: name, Kind: kind, Timeline: 1, Size: 100, StoredSize: int64(10 + n),
		Compression: compression.Gzip, SHA256: sha256.Sum256([]byte(server + name)), SystemID: 18446744073709551615,
		Key: server + "/wals/0000000100000000/" + name + ".gz", ArchivedAt: t0.Add(time.Duration(n) * time.Second)}
}

// record records files through wal.Catalog, failing the test unless each is new.
func record(st *StoreTest, files ...wal.ArchivedFile) {
	st.T.Helper()
	for _, f := range files {
		if _, inserted, err := st.Store.Catalog.Record(st.Ctx, f); err != nil || !inserted {
			st.T.Fatalf("record %s: inserted %v, %v", f.Name, inserted, err)
		}
	}
}

// outbox is what the catalog has written to the outbox.
func outbox(st *StoreTest) []proto.Message {
	st.T.Helper()
	return testenv.Must(st.Store.Outbox(st.Ctx))(st.T)
}

// same reports whether a and b are the same record, whatever zone their times are read in.
func same(a, b wal.ArchivedFile) bool {
	at := a.ArchivedAt.Equal(b.ArchivedAt)
	a.ArchivedAt, b.ArchivedAt = time.Time{}, time.Time{}
	return at && a == b
}
