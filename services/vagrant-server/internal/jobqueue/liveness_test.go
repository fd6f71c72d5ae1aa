package jobqueue_test

import (
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// A replica dies with the RunnerConfig streams it held, so nobody marks their runners
// offline: another replica's reaper does, once their last_seen is older than RunnerTimeout.
// A runner whose replica lives stays online.
func TestRunnerOfADeadReplicaGoesOfflineOnAnyReplica(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	opts := fastOptions()
	opts.RunnerTimeout = 600 * time.Millisecond
	dying := openReplica(t, db.URL, opts)
	alive := openReplica(t, db.URL, opts)
	register(t, dying.q, "orphan", false)
	register(t, alive.q, "kept", false)
	dying.close() // no RunnerOffline: the process is gone
	runReaper(t, alive.q, 50*time.Millisecond)

	ctx := ctxT(t)
	assignable := func(runner string) bool {
		v, err := alive.q.Validate(ctx, noopJob(runnerID(runner)), true)
		if err != nil {
			t.Fatal(err)
		}
		return v.Assignable
	}
	deadline := time.Now().Add(10 * time.Second)
	for assignable("orphan") {
		if time.Now().After(deadline) {
			t.Fatal("a runner whose replica died is still assignable after 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	info, err := alive.q.GetRunner(ctx, "orphan")
	if err != nil || info.Online {
		t.Fatalf("GetRunner(orphan) = %+v, %v; want offline", info, err)
	}
	var offline bool
	for _, ev := range runnerEvents(t, alive.pool, "orphan") {
		offline = offline || !ev.GetOnline()
	}
	if !offline {
		t.Fatal("no runner.state_changed event says the orphan went offline")
	}
	// Three timeouts later the runner held by the live replica is still online.
	time.Sleep(3 * opts.RunnerTimeout)
	if !assignable("kept") {
		t.Fatal("a runner whose replica refreshes it went offline")
	}
}

// A runner marked offline while its stream lives on (its replica could not reach the
// database for a while) comes back online with the next refresh.
func TestRunnerMarkedOfflineByMistakeIsRevived(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	opts := fastOptions()
	opts.RunnerTimeout = 300 * time.Millisecond
	r := openReplica(t, db.URL, opts)
	register(t, r.q, "r1", false, &vagrant.Component{Type: vagrant.Component_COMMAND})
	if _, err := r.pool.Exec(ctxT(t), `UPDATE runners SET online = false`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := r.q.GetRunner(ctxT(t), "r1")
		if err != nil {
			t.Fatal(err)
		}
		if info.Online {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the runner was not revived by its replica's refresh")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
