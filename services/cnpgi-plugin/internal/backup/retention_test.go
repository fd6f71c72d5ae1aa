package backup_test

import (
	"crypto/sha256"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"

	"github.com/plinth-dev/plinth/libs/storage/compression"
)

// walNames lists the WAL files archived for server pg (names without compression suffix).
func walNames(t *testing.T, in *instance) []string {
	t.Helper()
	var names []string
	for obj, err := range in.archive.Store.List(ctxT(t), "pg/wals/") {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, strings.TrimSuffix(path.Base(obj.Key), ".gz"))
	}
	return names
}

// TestRetainKeepsTheNewestAndTheWALItNeeds runs retention over three real backups and the
// WAL archived around them: a dry run changes nothing; keep-last-1 deletes the two older
// backups (store and catalog) and the WAL before the newest backup's first segment, keeps
// every file from there on, and reports the recovery window.
func TestRetainKeepsTheNewestAndTheWALItNeeds(t *testing.T) {
	in := startInstance(t)
	ctx := ctxT(t)
	target := backup.Target{Store: in.archive, Server: "pg"}
	var results []*backup.Result
	for i := range 3 {
		in.exec(t, "INSERT INTO t SELECT generate_series(1, 1000)", "SELECT pg_switch_wal()")
		res, err := in.svc.Take(ctx, backup.Request{Target: target, ImmediateCheckpoint: true, WaitForArchive: true, Name: "b" + string(rune('0'+i))})
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
	}
	newest := results[2].Info
	before := walNames(t, in)
	oldSeg := before[0]
	if oldSeg >= newest.BeginWAL {
		t.Fatalf("no WAL older than the newest backup: %v", before)
	}
	// The catalog knows the old segment; retention must forget it with its object.
	if _, _, err := in.catalog.Record(ctx, wal.ArchivedFile{Store: "archive", Server: "pg", Name: oldSeg, Kind: wal.KindSegment,
		Timeline: 1, Compression: compression.Gzip, SHA256: sha256.Sum256(nil), Key: "pg/wals/" + oldSeg[:16] + "/" + oldSeg + ".gz"}); err != nil {
		t.Fatal(err)
	}

	policy, err := backup.ParsePolicy("", 1)
	if err != nil {
		t.Fatal(err)
	}
	dry, err := in.svc.Retain(ctx, target, policy, true)
	if err != nil || len(dry.Deleted) != 2 || dry.WALDeleted == 0 || !dry.DryRun {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	if after := walNames(t, in); !slices.Equal(after, before) {
		t.Fatal("a dry run deleted WAL")
	}
	rep, err := in.svc.Retain(ctx, target, policy, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Kept, []string{newest.ID}) || !slices.Equal(rep.Deleted, []string{results[0].Info.ID, results[1].Info.ID}) ||
		rep.WALHorizon != newest.BeginWAL || !rep.FirstRecoverabilityPoint.Equal(newest.EndTime) {
		t.Fatalf("report %+v", rep)
	}
	listed, err := backup.List(ctx, in.archive.Store, "pg")
	if err != nil || len(listed) != 1 || listed[0].ID != newest.ID {
		t.Fatalf("backups left: %+v %v", listed, err)
	}
	recs, err := in.catalog.Backups(ctx, "archive", "pg")
	if err != nil || len(recs) != 1 || recs[0].ID != newest.ID {
		t.Fatalf("catalog left: %+v %v", recs, err)
	}
	after := walNames(t, in)
	for _, name := range before {
		kept := slices.Contains(after, name)
		if want := name[:24] >= newest.BeginWAL; kept != want {
			t.Errorf("WAL %s kept=%v, want %v (horizon %s)", name, kept, want, newest.BeginWAL)
		}
	}
	if len(before)-len(after) != rep.WALDeleted {
		t.Errorf("reported %d WAL files deleted, %d were", rep.WALDeleted, len(before)-len(after))
	}
	if _, ok, err := in.catalog.File(ctx, "archive", "pg", oldSeg); err != nil || ok {
		t.Fatalf("catalog still knows deleted WAL %s: %v %v", oldSeg, ok, err)
	}
}
