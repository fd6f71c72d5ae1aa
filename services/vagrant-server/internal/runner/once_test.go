package runner_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner"
)

// The server dies after the runner's ack arrives and before it is recorded: the job stays
// WAITING and will be assigned again. The runner must not have started it.
func TestRunnerDoesNotStartAJobWhoseAckWasNotRecorded(t *testing.T) {
	h := startRunner(t, harnessOptions{beforeStart: func(s *testServer) { s.loseAcks = true }})
	h.registration(t)
	h.srv.jobs <- upJob("job-lost-ack")
	waitFor(t, "the runner to ask for its next job", func() bool {
		h.srv.mu.Lock()
		defer h.srv.mu.Unlock()
		return len(h.srv.requests) >= 2
	})
	if calls := h.fake.Calls(); len(calls) != 0 {
		t.Fatalf("the runner ran %v for a job whose ack the server never recorded", calls)
	}
}

// The server hands the same job out twice (whatever the fault): the runner refuses the second
// run with an error instead of running the job again.
func TestRunnerRefusesAJobItAlreadyRan(t *testing.T) {
	h := startRunner(t, harnessOptions{})
	h.registration(t)
	h.srv.jobs <- upJob("job-twice")
	if evs := h.finish(t); evs[len(evs)-1].GetComplete() == nil {
		t.Fatalf("first run ended with %v", evs[len(evs)-1])
	}
	h.srv.jobs <- upJob("job-twice")
	evs := h.finish(t)
	last := evs[len(evs)-1].GetError().GetError()
	if codes.Code(last.GetCode()) != codes.FailedPrecondition {
		t.Fatalf("second run ended with %v, want a FailedPrecondition error", evs[len(evs)-1])
	}
	calls := h.fake.Calls()
	ups := slices.DeleteFunc(slices.Clone(calls), func(c string) bool { return !strings.HasPrefix(c, "up ") })
	if len(ups) != 1 {
		t.Fatalf("provider calls %v: up ran %d times, want once", calls, len(ups))
	}
}

// The journal keeps started jobs across restarts, and only the newest ones.
func TestJournalRemembersAcrossRestarts(t *testing.T) {
	path := t.TempDir() + "/jobs"
	j, err := runner.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 * 4096 {
		if err := j.Record(time.Unix(int64(i), 0).UTC().Format("job-20060102150405")); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, err = runner.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	newest := time.Unix(3*4096-1, 0).UTC().Format("job-20060102150405")
	oldest := time.Unix(0, 0).UTC().Format("job-20060102150405")
	if !j.Started(newest) || j.Started(oldest) {
		t.Fatalf("after a restart: newest remembered %v (want true), oldest %v (want false)", j.Started(newest), j.Started(oldest))
	}
}

// Only jobs that change something wait for the recorded ack: a read-only one (noop here)
// starts at once, since running it twice changes nothing.
func TestOnlyJobsWithEffectsWaitForTheRecordedAck(t *testing.T) {
	h := startRunner(t, harnessOptions{})
	h.registration(t)
	getJobs := func() int {
		h.srv.mu.Lock()
		defer h.srv.mu.Unlock()
		return h.srv.getJobs
	}
	h.srv.jobs <- noopJob("job-noop")
	h.finish(t)
	if n := getJobs(); n != 0 {
		t.Fatalf("a noop job asked for its recorded ack %d times", n)
	}
	h.srv.jobs <- upJob("job-up")
	h.finish(t)
	if getJobs() == 0 {
		t.Fatal("an up job started without its ack recorded")
	}
}

// Slots of one runner share its id, so the server may hand one job to two of them (the first
// assignment's ack was lost and the job was assigned again): one slot holds it, the other is
// refused, and once run it is refused for good.
func TestJournalHoldsAJobForOneSlot(t *testing.T) {
	j, _ := runner.OpenJournal("")
	if err := j.Hold("job-1"); err != nil {
		t.Fatalf("first Hold: %v", err)
	}
	if err := j.Hold("job-1"); err == nil {
		t.Fatal("a second slot could hold a job another slot holds")
	}
	j.Release("job-1")
	if err := j.Hold("job-1"); err != nil {
		t.Fatalf("Hold after Release of a job never started: %v", err)
	}
	if err := j.Record("job-1"); err != nil {
		t.Fatal(err)
	}
	j.Release("job-1")
	if err := j.Hold("job-1"); err == nil || !strings.Contains(err.Error(), "already ran") {
		t.Fatalf("Hold of a job that ran: %v, want it refused as already run", err)
	}
}
