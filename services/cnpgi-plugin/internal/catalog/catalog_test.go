package catalog_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"

	"github.com/plinth-dev/plinth/libs/storage/compression"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func open(t *testing.T) *catalog.Catalog {
	t.Helper()
	db := testenv.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, pool, err := catalog.Open(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// A second start finds the schema migrated and changes nothing.
	_, again, err := catalog.Open(ctx, db.URL)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	again.Close()
	return c
}

func file(name string, kind wal.Kind, content string) wal.ArchivedFile {
	return wal.ArchivedFile{
		Store: "main", Server: "pg", Name: name, Kind: kind, Timeline: 1, Size: int64(len(content)), StoredSize: 10,
		Compression: compression.Gzip, SHA256: sha256.Sum256([]byte(content)), SystemID: 18446744073709551615,
		Key: "pg/wals/x/" + name + ".gz",
	}
}

func TestRecordKeepsTheFirstVersion(t *testing.T) {
	c := open(t)
	ctx := context.Background()
	f := file("000000010000000000000001", wal.KindSegment, "a")
	stored, inserted, err := c.Record(ctx, f)
	if err != nil || !inserted || stored.SHA256 != f.SHA256 {
		t.Fatalf("first record: %+v %v %v", stored, inserted, err)
	}
	other := file("000000010000000000000001", wal.KindSegment, "b")
	stored, inserted, err = c.Record(ctx, other)
	if err != nil || inserted || stored.SHA256 != f.SHA256 {
		t.Fatalf("a second record must return the first: %+v %v %v", stored, inserted, err)
	}
	got, ok, err := c.File(ctx, "main", "pg", f.Name)
	if err != nil || !ok {
		t.Fatalf("file: %v %v", ok, err)
	}
	if got.SystemID != f.SystemID || got.Key != f.Key || got.Compression != compression.Gzip || got.Kind != wal.KindSegment ||
		got.Size != 1 || got.StoredSize != 10 || got.Timeline != 1 || time.Since(got.ArchivedAt) > time.Minute {
		t.Fatalf("read back %+v", got)
	}
	if _, ok, err := c.File(ctx, "other-store", "pg", f.Name); err != nil || ok {
		t.Fatalf("records are per store: %v %v", ok, err)
	}
}

func TestStatusAndFirstRequired(t *testing.T) {
	c := open(t)
	ctx := context.Background()
	st, err := c.Status(ctx, "main", "pg")
	if err != nil || st.FirstWAL != "" || st.LastWAL != "" || st.Segments != 0 || !st.LastArchivedAt.IsZero() {
		t.Fatalf("empty status: %+v %v", st, err)
	}
	for _, f := range []wal.ArchivedFile{
		file("000000010000000000000003", wal.KindSegment, "3"),
		file("000000010000000100000000", wal.KindSegment, "x"),
		file("000000010000000000000002", wal.KindSegment, "2"),
		file("00000002.history", wal.KindHistory, "h"),
		file("000000010000000000000002.00000028.backup", wal.KindBackup, "b"),
	} {
		if _, _, err := c.Record(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	st, err = c.Status(ctx, "main", "pg")
	if err != nil {
		t.Fatal(err)
	}
	if st.FirstWAL != "000000010000000000000002" || st.LastWAL != "000000010000000100000000" || st.Segments != 3 || st.Bytes != 50 {
		t.Fatalf("status %+v", st)
	}
	if err := c.SetFirstRequired(ctx, "main", "pg", "000000010000000000000002"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetFirstRequired(ctx, "main", "pg", "000000010000000000000003"); err != nil {
		t.Fatal(err)
	}
	if st, _ = c.Status(ctx, "main", "pg"); st.FirstRequired != "000000010000000000000003" {
		t.Fatalf("first required %q", st.FirstRequired)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}
