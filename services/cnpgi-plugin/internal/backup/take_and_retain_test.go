package backup_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

// failingDeletes is a store whose deletions fail, remembering the deadline they were given.
type failingDeletes struct {
	objectstore.Store
	mu        sync.Mutex
	deadlines []time.Time
}

func (f *failingDeletes) Delete(ctx context.Context, key string) error {
	d, ok := ctx.Deadline()
	if !ok {
		d = time.Time{}
	}
	f.mu.Lock()
	f.deadlines = append(f.deadlines, d)
	f.mu.Unlock()
	return errors.New("connection reset by peer")
}

// usableIDs lists the ids of the server's usable backups in the store.
func usableIDs(t *testing.T, st objectstore.Store) []string {
	t.Helper()
	listed, err := backup.List(ctxT(t), st, "pg")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, b := range listed {
		if b.Usable() {
			ids = append(ids, b.ID)
		}
	}
	return ids
}

// TestTakeAndRetain checks the backup use case's retention rule on a real instance: no
// policy, no retention; a failed backup runs none (older backups stay); a failed retention,
// run within RetentionBudget, is logged and reported but the backup succeeds; a successful
// backup is followed by its policy, which keeps the backup just taken.
func TestTakeAndRetain(t *testing.T) {
	in := startInstance(t)
	ctx := ctxT(t)
	target := backup.Target{Store: in.archive, Server: "pg"}
	keepOne, err := backup.ParsePolicy("", 1)
	if err != nil {
		t.Fatal(err)
	}
	take := func(svc *backup.Service, ctx context.Context, t0 backup.Target, p *backup.Policy) (*backup.Result, error) {
		in.exec(t, "INSERT INTO t SELECT generate_series(1, 1000)", "SELECT pg_switch_wal()")
		return svc.TakeAndRetain(ctx, backup.Request{Target: t0, ImmediateCheckpoint: true, WaitForArchive: true, Name: "b"}, p)
	}

	// Without a policy: two backups, no retention.
	for range 2 {
		res, err := take(in.svc, ctx, target, nil)
		if err != nil || res.Retention != nil {
			t.Fatalf("backup without a policy: %+v %v", res, err)
		}
	}
	older := usableIDs(t, in.archive.Store)
	if len(older) != 2 {
		t.Fatalf("backups before: %v", older)
	}

	// A failed backup applies no retention, though keep:1 would delete one of the two.
	flaky := &stores.Named{Name: in.archive.Name, Kind: "posix", Store: failingPuts{in.archive.Store}}
	if res, err := take(in.svc, ctx, backup.Target{Store: flaky, Server: "pg"}, &keepOne); err == nil || res != nil {
		t.Fatalf("backup through failing uploads: %+v %v", res, err)
	}
	if got := usableIDs(t, in.archive.Store); !slices.Equal(got, older) {
		t.Fatalf("retention ran after a failed backup: %v, had %v", got, older)
	}

	// A failed retention: the backup succeeds, the failure is reported and logged, and the
	// deletions ran within the budget. (A context without the test's one-minute deadline,
	// which would hide the budget's.)
	var logs bytes.Buffer
	logged := backup.NewService(in.catalog, backup.Options{InstanceURL: in.pg.URL("postgres"), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	refusing := &failingDeletes{Store: in.archive.Store}
	started := time.Now()
	res, err := take(logged, context.Background(), backup.Target{Store: &stores.Named{Name: in.archive.Name, Kind: "posix", Store: refusing}, Server: "pg"}, &keepOne)
	if err != nil || res.Info == nil || res.Info.Status != backup.StatusDone {
		t.Fatalf("a failed retention failed the backup: %+v %v", res, err)
	}
	if res.Retention == nil || res.Retention.Err == nil || res.Retention.Policy != keepOne {
		t.Fatalf("failed retention not reported: %+v", res.Retention)
	}
	if !strings.Contains(logs.String(), "retention after the backup failed") || !strings.Contains(logs.String(), "connection reset by peer") ||
		!strings.Contains(logs.String(), "policy=keep:1") {
		t.Fatalf("failed retention not logged:\n%s", logs.String())
	}
	if len(refusing.deadlines) == 0 {
		t.Fatal("retention deleted nothing: the budget was not exercised")
	}
	for _, d := range refusing.deadlines {
		if d.IsZero() || d.Before(started.Add(backup.RetentionBudget-time.Minute)) || d.After(time.Now().Add(backup.RetentionBudget)) {
			t.Fatalf("retention's deadline %v, want %v after the backup (started %v)", d, backup.RetentionBudget, started)
		}
	}
	if got := usableIDs(t, in.archive.Store); len(got) != 3 {
		t.Fatalf("backups after a failed retention: %v", got)
	}

	// A successful backup, then keep:1: only the backup just taken stays; the older ones,
	// the failed one included, go.
	all, err := backup.List(ctx, in.archive.Store, "pg")
	if err != nil {
		t.Fatal(err)
	}
	var before []string
	for _, b := range all {
		before = append(before, b.ID)
	}
	res, err = take(in.svc, ctx, target, &keepOne)
	if err != nil || res.Retention == nil || res.Retention.Err != nil {
		t.Fatalf("backup with retention: %+v %v", res, err)
	}
	if rep := res.Retention.Report; !slices.Equal(rep.Kept, []string{res.Info.ID}) || !slices.Equal(slices.Sorted(slices.Values(rep.Deleted)), slices.Sorted(slices.Values(before))) || !rep.LastSuccessful.Equal(res.Info.EndTime) {
		t.Fatalf("retention after the backup %s: %+v", res.Info.ID, rep)
	}
	if got := usableIDs(t, in.archive.Store); !slices.Equal(got, []string{res.Info.ID}) {
		t.Fatalf("backups after retention: %v", got)
	}
}
