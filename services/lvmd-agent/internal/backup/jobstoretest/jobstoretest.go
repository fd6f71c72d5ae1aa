// Package jobstoretest is the conformance suite every backup.JobStore passes (after
// Waypoint's statetest): a table of behaviours, each run plain and with the store reopened
// mid-test, so nothing a job's life relies on lives only in a process — the agent restarts
// under running jobs by design (Interrupt).
package jobstoretest

import (
	"context"
	"errors"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
)

// Open gives a test an empty store and returns how to open it; every call opens it anew on
// the same data, as a restarted agent would.
type Open func(t *testing.T) (open func() backup.JobStore)

// Run runs every behaviour against stores from open, plain and with restarts.
func Run(t *testing.T, open Open) {
	testenv.RunCases(t, behaviours, func(t *testing.T, ctx context.Context, restarts bool) *storeTest {
		reopen := open(t)
		st := &storeTest{t: t, ctx: ctx, store: reopen()}
		st.reopen = func() backup.JobStore { return st.store }
		if restarts {
			st.reopen = reopen
		}
		return st
	})
}

// storeTest is one behaviour's run: restart swaps the store for one reopened on the same
// data (a no-op in the plain variant).
type storeTest struct {
	t      *testing.T
	ctx    context.Context
	store  backup.JobStore
	reopen func() backup.JobStore
}

func (st *storeTest) restart() { st.store = st.reopen() }

func (st *storeTest) claim(j backup.Job, restart, wantClaimed bool) backup.Job {
	st.t.Helper()
	got, claimed, err := st.store.Claim(st.ctx, j, restart)
	if err != nil {
		st.t.Fatalf("claim %s: %v", j.Name, err)
	}
	if claimed != wantClaimed {
		st.t.Fatalf("claim %s (restart %v): claimed %v, want %v; job %+v", j.Name, restart, claimed, wantClaimed, got)
	}
	return got
}

func (st *storeTest) get(j backup.Job) backup.Job {
	st.t.Helper()
	got, err := st.store.Get(st.ctx, j.Node, j.Kind, j.Name, j.VolumeHandle)
	if err != nil {
		st.t.Fatalf("get %s: %v", j.Name, err)
	}
	return got
}

func (st *storeTest) finish(id int64, o backup.Outcome) backup.Job {
	st.t.Helper()
	got, err := st.store.Finish(st.ctx, id, o)
	if err != nil {
		st.t.Fatalf("finish %d: %v", id, err)
	}
	return got
}

func (st *storeTest) interrupt(node, owner string, want int) {
	st.t.Helper()
	if n, err := st.store.Interrupt(st.ctx, node, owner, "interrupted: the agent restarted"); err != nil || n != want {
		st.t.Fatalf("interrupt %s under %s: %d, %v; want %d", node, owner, n, err, want)
	}
}

func job(node, name, owner string) backup.Job {
	return backup.Job{Node: node, Kind: backup.KindBackup, Name: name, VolumeHandle: "vol-" + name, DeviceClass: "ssd",
		Location: "http://s3.example/bucket/" + name, Encrypted: true, SizeBytes: 100, Owner: owner}
}

var behaviours = []testenv.Case[*storeTest]{
	{Name: "a claim records the job once", Run: func(st *storeTest) {
		j := job("n1", "b1", "agent-1")
		if _, err := st.store.Get(st.ctx, j.Node, j.Kind, j.Name, j.VolumeHandle); !errors.Is(err, backup.ErrJobNotFound) {
			st.t.Fatalf("get before the claim: %v, want ErrJobNotFound", err)
		}
		got := st.claim(j, false, true)
		if got.ID == 0 || got.State != backup.InProgress || got.Attempts != 1 || got.BytesDone != 0 || got.StartedAt.IsZero() ||
			!got.FinishedAt.IsZero() || got.Node != j.Node || got.Kind != j.Kind || got.Name != j.Name || got.VolumeHandle != j.VolumeHandle ||
			got.DeviceClass != j.DeviceClass || got.Location != j.Location || !got.Encrypted || got.SizeBytes != j.SizeBytes || got.Owner != j.Owner {
			st.t.Fatalf("claimed %+v from %+v", got, j)
		}
		st.restart()
		if again := st.claim(j, false, false); again.ID != got.ID || again.State != backup.InProgress || again.Attempts != 1 {
			st.t.Fatalf("a second claim must return the running job: %+v", again)
		}
		if stored := st.get(j); stored.ID != got.ID || stored.Location != j.Location || stored.Owner != j.Owner {
			st.t.Fatalf("stored %+v", stored)
		}
	}},
	{Name: "progress, then one finish", Run: func(st *storeTest) {
		j := st.claim(job("n1", "b1", "agent-1"), false, true)
		if err := st.store.Progress(st.ctx, j.ID, 40); err != nil {
			st.t.Fatal(err)
		}
		st.restart()
		if got := st.get(j); got.BytesDone != 40 || got.State != backup.InProgress {
			st.t.Fatalf("after progress %+v", got)
		}
		done := st.finish(j.ID, backup.Outcome{State: backup.Complete, BytesDone: 100})
		if done.State != backup.Complete || done.BytesDone != 100 || done.FinishedAt.IsZero() || done.Retryable {
			st.t.Fatalf("finished %+v", done)
		}
		st.restart()
		if late := st.finish(j.ID, backup.Outcome{State: backup.Failed, Message: "late"}); late.State != backup.Complete || late.Message != "" {
			st.t.Fatalf("a second finish must change nothing: %+v", late)
		}
		if err := st.store.Progress(st.ctx, j.ID, 7); err != nil {
			st.t.Fatal(err)
		}
		if got := st.get(j); got.BytesDone != 100 || got.State != backup.Complete {
			st.t.Fatalf("progress after the finish must change nothing: %+v", got)
		}
	}},
	{Name: "interrupt fails other owners' running jobs of the node, retryably", Run: func(st *storeTest) {
		gone := st.claim(job("n1", "b1", "agent-1"), false, true)
		if err := st.store.Progress(st.ctx, gone.ID, 30); err != nil {
			st.t.Fatal(err)
		}
		mine := st.claim(job("n1", "b2", "agent-2"), false, true)
		elsewhere := st.claim(job("n2", "b3", "agent-1"), false, true)
		finished := st.claim(job("n1", "b4", "agent-1"), false, true)
		st.finish(finished.ID, backup.Outcome{State: backup.Complete, BytesDone: 100})
		st.restart()
		st.interrupt("n1", "agent-2", 1)
		st.interrupt("n1", "agent-2", 0)
		failed := st.get(gone)
		if failed.State != backup.Failed || !failed.Retryable || failed.Message != "interrupted: the agent restarted" || failed.BytesDone != 30 || failed.FinishedAt.IsZero() {
			st.t.Fatalf("interrupted %+v", failed)
		}
		for _, j := range []backup.Job{mine, elsewhere} {
			if got := st.get(j); got.State != backup.InProgress {
				st.t.Fatalf("%s must still run: %+v", j.Name, got)
			}
		}
		if got := st.get(finished); got.State != backup.Complete {
			st.t.Fatalf("a finished job must stay finished: %+v", got)
		}
		// The same request after the restart starts it again.
		again := job("n1", "b1", "agent-2")
		restarted := st.claim(again, false, true)
		if restarted.ID != gone.ID || restarted.State != backup.InProgress || restarted.Attempts != 2 || restarted.BytesDone != 0 ||
			restarted.Message != "" || restarted.Retryable || restarted.Owner != "agent-2" || !restarted.FinishedAt.IsZero() {
			st.t.Fatalf("restarted %+v", restarted)
		}
	}},
	{Name: "a failed job restarts only on request", Run: func(st *storeTest) {
		j := job("n1", "b1", "agent-1")
		first := st.claim(j, false, true)
		st.finish(first.ID, backup.Outcome{State: backup.Failed, Message: "the store refused the upload"})
		st.restart()
		if same := st.claim(j, false, false); same.State != backup.Failed || same.Message != "the store refused the upload" {
			st.t.Fatalf("a failed job is reported, not restarted: %+v", same)
		}
		again := st.claim(j, true, true)
		if again.ID != first.ID || again.State != backup.InProgress || again.Attempts != 2 {
			st.t.Fatalf("restart on request: %+v", again)
		}
		st.restart()
		if running := st.claim(j, true, false); running.Attempts != 2 {
			st.t.Fatalf("a running job is never restarted: %+v", running)
		}
	}},
	{Name: "a job's key is node, kind, name and volume", Run: func(st *storeTest) {
		base := job("n1", "b1", "agent-1")
		seen := map[int64]bool{st.claim(base, false, true).ID: true}
		restore, otherVolume, otherNode := base, base, base
		restore.Kind = backup.KindRestore
		otherVolume.VolumeHandle = "vol-other"
		otherNode.Node = "n2"
		for _, j := range []backup.Job{restore, otherVolume, otherNode} {
			got := st.claim(j, false, true)
			if seen[got.ID] {
				st.t.Fatalf("%+v reused job %d", j, got.ID)
			}
			seen[got.ID] = true
		}
		st.restart()
		if got := st.get(restore); got.Kind != backup.KindRestore {
			st.t.Fatalf("restore %+v", got)
		}
	}},
}
