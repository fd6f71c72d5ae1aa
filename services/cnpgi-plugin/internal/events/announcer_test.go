package events_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	platformevents "github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/events"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"

	"github.com/plinth-dev/plinth/libs/storage/compression"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func open(t *testing.T) (*catalog.Catalog, *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, pool, err := catalog.Open(ctx, testenv.DB(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return c, pool
}

func record(t *testing.T, c *catalog.Catalog, server string, names ...string) {
	t.Helper()
	for _, n := range names {
		kind := wal.KindSegment
		if len(n) != 24 {
			kind = wal.KindHistory
		}
		f := wal.ArchivedFile{Store: "main", Server: server, Name: n, Kind: kind, Timeline: 1, Size: 100, StoredSize: 10,
			Compression: compression.Gzip, SHA256: sha256.Sum256([]byte(n)), Key: server + "/wals/" + n}
		if _, _, err := c.Record(context.Background(), f); err != nil {
			t.Fatal(err)
		}
	}
}

// outbox returns the WALArchived events in the outbox, oldest first.
func outbox(t *testing.T, pool *pgxpool.Pool) []*eventsv1.WALArchived {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT subject, type, payload FROM outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []*eventsv1.WALArchived
	for rows.Next() {
		var subject, typ string
		var payload []byte
		if err := rows.Scan(&subject, &typ, &payload); err != nil {
			t.Fatal(err)
		}
		if subject != platformevents.SubjectOf(&eventsv1.WALArchived{}) || typ != "plinth.events.v1.WALArchived" {
			t.Fatalf("outbox row %s %s", subject, typ)
		}
		ev := &eventsv1.WALArchived{}
		if err := proto.Unmarshal(payload, ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func segments(from, n int) []string {
	var out []string
	for i := from; i < from+n; i++ {
		out = append(out, fmt.Sprintf("0000000100000000%08X", i))
	}
	return out
}

// TestBatchesBySizeThenByAge: a full batch is announced at once; a smaller one only once its
// oldest file has waited the interval.
func TestBatchesBySizeThenByAge(t *testing.T) {
	c, pool := open(t)
	a := events.NewAnnouncer(c, events.Options{Batch: 3, Interval: time.Hour})
	ctx := context.Background()
	record(t, c, "pg", append(segments(1, 4), "00000002.history")...)
	n, err := a.Flush(ctx, false)
	if err != nil || n != 1 {
		t.Fatalf("flush: %d events, %v; want the one full batch", n, err)
	}
	n, err = a.Flush(ctx, false)
	if err != nil || n != 0 {
		t.Fatalf("second flush: %d events, %v; two files are younger than the interval", n, err)
	}
	if n, err := a.Flush(ctx, true); err != nil || n != 1 {
		t.Fatalf("flush all: %d, %v", n, err)
	}
	evs := outbox(t, pool)
	if len(evs) != 2 {
		t.Fatalf("%d events", len(evs))
	}
	if !slices.Equal(evs[0].GetWalNames(), segments(1, 3)) || evs[0].GetSegments() != 3 || evs[0].GetSizeBytes() != 300 || evs[0].GetStoredBytes() != 30 {
		t.Fatalf("first event %v", evs[0])
	}
	second := evs[1]
	if !slices.Equal(second.GetWalNames(), []string{"000000010000000000000004", "00000002.history"}) || second.GetSegments() != 1 ||
		second.GetObjectStore() != "main" || second.GetServerName() != "pg" {
		t.Fatalf("second event %v", second)
	}
	if second.GetFirstArchivedAt().AsTime().After(second.GetLastArchivedAt().AsTime()) || second.GetFirstArchivedAt().AsTime().IsZero() {
		t.Fatalf("times %v %v", second.GetFirstArchivedAt(), second.GetLastArchivedAt())
	}
	if n, err := a.Flush(ctx, true); err != nil || n != 0 {
		t.Fatalf("nothing left, yet %d events, %v", n, err)
	}
}

// TestIntervalAnnouncesAStragglerAlone: with a short interval, Run announces a single file
// without waiting for a batch.
func TestIntervalAnnouncesAStragglerAlone(t *testing.T) {
	c, pool := open(t)
	a := events.NewAnnouncer(c, events.Options{Batch: 100, Interval: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	record(t, c, "pg", segments(7, 1)...)
	deadline := time.Now().Add(10 * time.Second)
	for len(outbox(t, pool)) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if evs := outbox(t, pool); len(evs) != 1 || !slices.Equal(evs[0].GetWalNames(), segments(7, 1)) {
		t.Fatalf("events %v", evs)
	}
}

// TestConcurrentAnnouncersNeverRepeatAFile: several plugin processes share one catalog.
func TestConcurrentAnnouncersNeverRepeatAFile(t *testing.T) {
	c, pool := open(t)
	record(t, c, "a", segments(1, 40)...)
	record(t, c, "b", segments(1, 40)...)
	var wg sync.WaitGroup
	for range 4 {
		a := events.NewAnnouncer(c, events.Options{Batch: 7, Interval: time.Hour})
		wg.Go(func() {
			if _, err := a.Flush(context.Background(), true); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for _, ev := range outbox(t, pool) {
		if len(ev.GetWalNames()) > 7 {
			t.Fatalf("a batch of %d files, limit 7", len(ev.GetWalNames()))
		}
		for _, n := range ev.GetWalNames() {
			seen[ev.GetServerName()+"/"+n]++
		}
	}
	if len(seen) != 80 {
		t.Fatalf("%d files announced, want 80", len(seen))
	}
	for k, v := range seen {
		if v != 1 {
			t.Fatalf("%s announced %d times", k, v)
		}
	}
}

// TestBulkLoadsCanOptOut: `SET LOCAL cnpgi.announce_wal = 'off'` (a catalog rebuild) records
// files without announcing them.
func TestBulkLoadsCanOptOut(t *testing.T) {
	c, pool := open(t)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SET LOCAL cnpgi.announce_wal = 'off'`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO wal_files (store, server, name, kind, timeline, size, stored_size, compression, sha256, object_key)
		VALUES ('main', 'pg', '000000010000000000000001', 'segment', 1, 1, 1, 'gzip', $1, 'k')`, make([]byte, 32)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	record(t, c, "pg", segments(2, 1)...) // a later, normal archive is announced
	if _, err := events.NewAnnouncer(c, events.Options{}).Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	if evs := outbox(t, pool); len(evs) != 1 || !slices.Equal(evs[0].GetWalNames(), segments(2, 1)) {
		t.Fatalf("events %v", evs)
	}
}
