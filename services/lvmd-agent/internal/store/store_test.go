package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"

	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/platform/testenv"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup/jobstoretest"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/store"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume/volumetest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// open migrates a fresh schema and returns a Store on it; reopen gives another Store on the
// same schema, as a restarted agent would have.
func open(t *testing.T) (reopen func() (*store.Store, *pgxpool.Pool)) {
	t.Helper()
	url := testenv.DB(t).URL
	return func() (*store.Store, *pgxpool.Pool) {
		pool, err := service.OpenPostgres(context.Background(), url, store.Schema, store.Migrations)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return store.New(pool), pool
	}
}

func subjects(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT subject FROM outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		out = append(out, strings.TrimPrefix(s, "plinth.lvmd."))
	}
	return out
}

// changes counts what one record of a class's state wrote, as volume.Sync decided it.
type changes struct {
	Created, Removed, Resized int
	CapacityChanged           bool
}

// syncClass records a class's state on node as the volume service does: UpdateVolumes with
// volume.Sync deciding.
func syncClass(ctx context.Context, st *store.Store, node string, c volume.Capacity, vols []volume.Volume) (changes, error) {
	ch, err := st.UpdateVolumes(ctx, node, c.DeviceClass, func(before volume.Record) (volume.RecordChange, error) {
		return volume.Sync(before, c, vols), nil
	})
	n := changes{Created: len(ch.Insert), Removed: len(ch.Delete), CapacityChanged: ch.Capacity != nil}
	for _, e := range ch.Events {
		if _, ok := e.(volume.VolumeResized); ok {
			n.Resized++
		}
	}
	return n, err
}

func TestSyncWritesOneEventPerDifference(t *testing.T) {
	t.Parallel()
	reopen := open(t)
	st, pool := reopen()
	ctx := context.Background()
	c := volume.Capacity{DeviceClass: "ssd", VolumeGroup: "vg", Default: true, Size: 10 << 30, Free: 8 << 30, Volumes: 2}
	vols := []volume.Volume{{Name: "a", DeviceClass: "ssd", Size: 1 << 30, Tags: []string{"x"}}, {Name: "b", DeviceClass: "ssd", Size: 1 << 30}}
	ch, err := syncClass(ctx, st, "n1", c, vols)
	if err != nil || ch != (changes{Created: 2, CapacityChanged: true}) {
		t.Fatalf("first sync %+v %v", ch, err)
	}
	if ch, err := syncClass(ctx, st, "n1", c, vols); err != nil || ch != (changes{}) {
		t.Fatalf("an unchanged class must write nothing: %+v %v", ch, err)
	}
	// Another node's identical class is its own.
	if ch, _ := syncClass(ctx, st, "n2", c, vols); ch.Created != 2 {
		t.Fatalf("node n2: %+v", ch)
	}
	// A restarted agent compares with the same record.
	st, _ = reopen()
	c.Free, c.Volumes = 7<<30, 2
	vols = []volume.Volume{{Name: "a", DeviceClass: "ssd", Size: 2 << 30, Tags: []string{"x"}}, {Name: "c", DeviceClass: "ssd", Size: 1 << 30}}
	ch, err = syncClass(ctx, st, "n1", c, vols)
	if err != nil || ch != (changes{Created: 1, Removed: 1, Resized: 1, CapacityChanged: true}) {
		t.Fatalf("second sync %+v %v", ch, err)
	}
	got := strings.Join(subjects(t, pool), " ")
	want := "volume.created volume.created capacity.changed volume.created volume.created capacity.changed volume.resized volume.created volume.removed capacity.changed"
	if got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
}

// TestVolumeCreatedNamesTheRestoredBackup: a new volume's event names the backup its node's
// restore job in that class reads, and nothing for another node's restore or a backup job.
func TestVolumeCreatedNamesTheRestoredBackup(t *testing.T) {
	t.Parallel()
	reopen := open(t)
	st, pool := reopen()
	ctx := context.Background()
	for _, j := range []backup.Job{
		{Node: "n1", Kind: backup.KindRestore, Name: "r", VolumeHandle: "r", DeviceClass: "ssd", Location: "http://s3/b/r", Owner: "agent-1"},
		{Node: "n2", Kind: backup.KindRestore, Name: "other", VolumeHandle: "other", DeviceClass: "ssd", Location: "http://s3/b/n2", Owner: "agent-2"},
		{Node: "n1", Kind: backup.KindBackup, Name: "plain", VolumeHandle: "plain", DeviceClass: "ssd", Location: "http://s3/b/plain", Owner: "agent-1"},
	} {
		if _, _, err := st.Claim(ctx, j, false); err != nil {
			t.Fatal(err)
		}
	}
	c := volume.Capacity{DeviceClass: "ssd", VolumeGroup: "vg", Size: 10 << 30, Free: 7 << 30, Volumes: 3}
	vols := []volume.Volume{{Name: "other", DeviceClass: "ssd", Size: 1 << 30}, {Name: "plain", DeviceClass: "ssd", Size: 1 << 30},
		{Name: "r", DeviceClass: "ssd", Size: 1 << 30, Tags: []string{"t"}}}
	if ch, err := syncClass(ctx, st, "n1", c, vols); err != nil || ch.Created != 3 {
		t.Fatalf("sync %+v %v", ch, err)
	}
	rows, err := pool.Query(ctx, `SELECT payload FROM outbox WHERE subject = $1 ORDER BY id`, events.SubjectOf(&eventsv1.VolumeCreated{}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var payload []byte
	if _, err := pgx.ForEachRow(rows, []any{&payload}, func() error {
		var e eventsv1.VolumeCreated
		if err := proto.Unmarshal(payload, &e); err != nil {
			return err
		}
		got = append(got, fmt.Sprintf("%s %s/%s %d %v %q", e.GetNode(), e.GetDeviceClass(), e.GetName(), e.GetSizeBytes(), e.GetTags(), e.GetRestoredFrom()))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{`n1 ssd/other 1073741824 [] ""`, `n1 ssd/plain 1073741824 [] ""`, `n1 ssd/r 1073741824 [t] "http://s3/b/r"`}
	if !slices.Equal(got, want) {
		t.Fatalf("created events\n got %q\nwant %q", got, want)
	}
}

func TestJobsClaimFinishInterrupt(t *testing.T) {
	t.Parallel()
	reopen := open(t)
	st, pool := reopen()
	ctx := context.Background()
	j := backup.Job{Node: "n1", Kind: backup.KindBackup, Name: "b1", VolumeHandle: "v1", DeviceClass: "ssd", Location: "http://s3/b/p", SizeBytes: 5, Owner: "agent-1"}
	if _, err := st.Get(ctx, "n1", backup.KindBackup, "b1", "v1"); !errors.Is(err, backup.ErrJobNotFound) {
		t.Fatalf("get before claim: %v", err)
	}
	got, claimed, err := st.Claim(ctx, j, false)
	if err != nil || !claimed || got.State != backup.InProgress || got.ID == 0 || got.Attempts != 1 {
		t.Fatalf("claim %+v %v %v", got, claimed, err)
	}
	again, claimed, err := st.Claim(ctx, j, false)
	if err != nil || claimed || again.ID != got.ID {
		t.Fatalf("a second claim must return the job: %+v %v %v", again, claimed, err)
	}
	if err := st.Progress(ctx, got.ID, 3); err != nil {
		t.Fatal(err)
	}
	// The agent dies; the next one fails its job, retryably, and the same request restarts it.
	st, _ = reopen()
	if n, err := st.Interrupt(ctx, "n1", "agent-2", "interrupted"); err != nil || n != 1 {
		t.Fatalf("interrupt %d %v", n, err)
	}
	if n, _ := st.Interrupt(ctx, "n1", "agent-2", "interrupted"); n != 0 {
		t.Fatal("interrupt must only touch jobs in progress")
	}
	failed, _ := st.Get(ctx, "n1", backup.KindBackup, "b1", "v1")
	if failed.State != backup.Failed || !failed.Retryable || failed.BytesDone != 3 {
		t.Fatalf("interrupted %+v", failed)
	}
	j.Owner = "agent-2"
	restarted, claimed, err := st.Claim(ctx, j, false)
	if err != nil || !claimed || restarted.State != backup.InProgress || restarted.Attempts != 2 || restarted.BytesDone != 0 {
		t.Fatalf("restart %+v %v %v", restarted, claimed, err)
	}
	done, err := st.Finish(ctx, restarted.ID, backup.Outcome{State: backup.Complete, BytesDone: 5})
	if err != nil || done.State != backup.Complete || done.BytesDone != 5 {
		t.Fatalf("finish %+v %v", done, err)
	}
	// Finishing twice changes nothing; a finished, non-retryable job is only restarted on request.
	if again, err := st.Finish(ctx, restarted.ID, backup.Outcome{State: backup.Failed, Message: "late"}); err != nil || again.State != backup.Complete {
		t.Fatalf("second finish %+v %v", again, err)
	}
	if same, claimed, _ := st.Claim(ctx, j, false); claimed || same.State != backup.Complete {
		t.Fatalf("claim of a finished job %+v %v", same, claimed)
	}
	if _, claimed, _ := st.Claim(ctx, j, true); !claimed {
		t.Fatal("restart=true must restart a finished job")
	}
	long, err := st.Finish(ctx, restarted.ID, backup.Outcome{State: backup.Failed, Message: strings.Repeat("m", 1<<20)})
	if err != nil || len(long.Message) > 5<<10 {
		t.Fatalf("a long message must be truncated: %d %v", len(long.Message), err)
	}
	got2 := strings.Join(subjects(t, pool), " ")
	if want := strings.TrimSpace(strings.Repeat("backup.state_changed ", 6)); got2 != want {
		t.Fatalf("events %s", got2)
	}
}

// TestVolumeRecordConformance runs the volume service's Recorder suite on Postgres, each
// restart a new pool and Store on the same schema.
func TestVolumeRecordConformance(t *testing.T) {
	volumetest.RecorderConformance(t, func(t *testing.T) func(string) volume.Recorder {
		reopen := open(t)
		return func(node string) volume.Recorder {
			st, _ := reopen()
			return st.VolumeRecord(node)
		}
	})
}

// TestJobStoreConformance runs backup.JobStore's suite on Postgres, each restart a new pool
// and Store on the same schema.
func TestJobStoreConformance(t *testing.T) {
	jobstoretest.Run(t, func(t *testing.T) func() backup.JobStore {
		reopen := open(t)
		return func() backup.JobStore { st, _ := reopen(); return st }
	})
}
