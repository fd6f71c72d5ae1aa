package history_test

import (
	"context"
	"crypto/sha256"
	"slices"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/history"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"

	"github.com/plinth-dev/plinth/libs/storage/compression"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestSummary(t *testing.T) {
	ctx := context.Background()
	cat, pool, err := catalog.Open(ctx, testenv.DB(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	r := history.NewReader(pool)
	empty, err := r.Summary(ctx, "main", "pg")
	if err != nil || empty != (history.Summary{}) {
		t.Fatalf("empty archive: %+v %v", empty, err)
	}
	for i, n := range []string{"000000010000000000000002", "000000010000000000000001", "00000002.history", "000000020000000000000003"} {
		kind := wal.KindSegment
		if len(n) != 24 {
			kind = wal.KindHistory
		}
		f := wal.ArchivedFile{Store: "main", Server: "pg", Name: n, Kind: kind, Timeline: 1, Size: 100, StoredSize: int64(10 * (i + 1)),
			Compression: compression.Gzip, SHA256: sha256.Sum256([]byte(n)), Key: n}
		if _, _, err := cat.Record(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	other := wal.ArchivedFile{Store: "main", Server: "other", Name: "000000010000000000000009", Kind: wal.KindSegment, Size: 1, StoredSize: 1000,
		Compression: compression.Gzip, Key: "x"}
	if _, _, err := cat.Record(ctx, other); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)
	for _, b := range []struct {
		id, status string
		end        *time.Time
	}{
		{"20260801T090000", "DONE", ptr(t0)}, {"20260801T100000", "DONE", ptr(t0.Add(time.Hour))},
		{"20260801T110000", "FAILED", ptr(t0.Add(2 * time.Hour))}, {"20260801T120000", "STARTED", nil},
	} {
		if _, err := pool.Exec(ctx, `INSERT INTO base_backups (store, server, backup_id, status, begin_time, end_time) VALUES ('main', 'pg', $1, $2, $3, $4)`,
			b.id, b.status, t0.Add(-time.Hour), b.end); err != nil {
			t.Fatal(err)
		}
	}
	s, err := r.Summary(ctx, "main", "pg")
	if err != nil {
		t.Fatal(err)
	}
	if s.Segments != 3 || s.StoredBytes != 100 || s.FirstWAL != "000000010000000000000001" || s.LastWAL != "000000020000000000000003" ||
		s.LastArchivedAt.IsZero() || s.Backups != 2 || !s.FirstRecoverabilityPoint.Equal(t0) ||
		!s.LastSuccessfulBackup.Equal(t0.Add(time.Hour)) || !s.LastFailedBackup.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("summary %+v", s)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO base_backups (store, server, backup_id, status, begin_time) VALUES ('cold', 'only-backups', 'b', 'FAILED', now())`); err != nil {
		t.Fatal(err)
	}
	coldFailed, err := r.Summary(ctx, "cold", "only-backups")
	if err != nil || coldFailed.LastFailedBackup.IsZero() || coldFailed.Segments != 0 {
		t.Fatalf("summary of a server with only a failed backup: %+v %v", coldFailed, err)
	}
	otherSum, err := r.Summary(ctx, "main", "other")
	if err != nil {
		t.Fatal(err)
	}
	// Servers gives, in one query, each server's Summary as Summary gives it alone.
	all, err := r.Servers(ctx, "")
	want := []history.Server{{"cold", "only-backups", coldFailed}, {"main", "other", otherSum}, {"main", "pg", s}}
	if err != nil || !slices.Equal(all, want) {
		t.Fatalf("servers = %+v, %v; want %+v", all, err, want)
	}
	if main, err := r.Servers(ctx, "main"); err != nil || !slices.Equal(main, want[1:]) {
		t.Fatalf("servers of main = %+v, %v", main, err)
	}
	for _, c := range []struct {
		store, server string
		known         bool
	}{{"main", "pg", true}, {"cold", "only-backups", true}, {"main", "nobody", false}, {"cold", "pg", false}} {
		if _, ok, err := r.Find(ctx, c.store, c.server); err != nil || ok != c.known {
			t.Errorf("Find(%s, %s) = %v, %v", c.store, c.server, ok, err)
		}
	}
}

func ptr(t time.Time) *time.Time { return &t }
