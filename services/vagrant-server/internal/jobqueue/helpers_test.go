package jobqueue_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue/jobqueuetest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fastOptions are short deadlines so timeout tests take well under a second each.
func fastOptions() jobqueue.Options {
	return jobqueue.Options{
		AckTimeout:       300 * time.Millisecond,
		HeartbeatTimeout: 300 * time.Millisecond,
		PollInterval:     time.Minute, // tests that wait on Assign must be woken by NOTIFY
	}
}

// replica is one server replica: its own pool, Queue and (optionally) Reaper.
type replica struct {
	pool *pgxpool.Pool
	q    *jobqueue.Queue
}

// openReplica opens a pool on url (migrating like the service does) and a Queue on it,
// closed when the test ends (queue first, then pool).
func openReplica(t testing.TB, url string, opts jobqueue.Options) *replica {
	t.Helper()
	ctx := context.Background()
	pool, err := pg.Open(ctx, url, "vagrant", nil, events.Migrations(), jobqueue.Migrations())
	if err != nil {
		t.Fatalf("pg.Open: %v", err)
	}
	q, err := jobqueue.New(ctx, pool, opts)
	if err != nil {
		pool.Close()
		t.Fatalf("jobqueue.New: %v", err)
	}
	r := &replica{pool: pool, q: q}
	t.Cleanup(r.close)
	return r
}

func (r *replica) close() {
	r.q.Close()
	r.pool.Close()
}

// runReaper runs a Reaper for q until the test ends.
func runReaper(t testing.TB, q *jobqueue.Queue, interval time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = jobqueue.NewReaper(q, interval).Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func anyRunner() *vagrant.Ref_Runner {
	return &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Any{Any: &vagrant.Ref_RunnerAny{}}}
}

func runnerID(id string) *vagrant.Ref_Runner {
	return &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Id{Id: &vagrant.Ref_RunnerId{Id: id}}}
}

func noopJob(target *vagrant.Ref_Runner) *vagrant.Job {
	return &vagrant.Job{TargetRunner: target, Operation: &vagrant.Job_Noop_{Noop: &vagrant.Job_Noop{}}}
}

func register(t testing.TB, q *jobqueue.Queue, id string, byIDOnly bool, components ...*vagrant.Component) int64 {
	t.Helper()
	s, err := q.RegisterRunner(context.Background(), &vagrant.Runner{Id: id, ByIdOnly: byIDOnly, Components: components}, "token:test")
	if err != nil {
		t.Fatalf("RegisterRunner(%s): %v", id, err)
	}
	return s
}

func mustQueue(t testing.TB, q *jobqueue.Queue, job *vagrant.Job, expiresIn time.Duration) string {
	t.Helper()
	id, err := q.Queue(context.Background(), job, expiresIn, "token:test")
	if err != nil {
		t.Fatalf("Queue: %v", err)
	}
	return id
}

// assignWithin calls Assign and fails the test when nothing comes within d.
func assignWithin(t testing.TB, q *jobqueue.Queue, runner string, d time.Duration) *vagrant.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	job, err := q.Assign(ctx, runner)
	if err != nil {
		t.Fatalf("Assign(%s): %v", runner, err)
	}
	return job
}

// runningJob queues a noop job and has runner take and acknowledge it; it returns the id.
func runningJob(t testing.TB, q *jobqueue.Queue, runner string) string {
	t.Helper()
	id := mustQueue(t, q, noopJob(anyRunner()), 0)
	if got := assignWithin(t, q, runner, 5*time.Second).GetId(); got != id {
		t.Fatalf("%s was assigned %s, want %s", runner, got, id)
	}
	if _, err := q.Ack(context.Background(), id, runner); err != nil {
		t.Fatal(err)
	}
	return id
}

// assignLater calls Assign in the background (for 20 s at most) and delivers the job it
// returns (nil on an error, which fails the test).
func assignLater(t testing.TB, q *jobqueue.Queue, runner string) <-chan *vagrant.Job {
	got := make(chan *vagrant.Job, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		job, err := q.Assign(ctx, runner)
		if err != nil {
			t.Errorf("Assign(%s): %v", runner, err)
		}
		got <- job
	}()
	return got
}

// expectAssigned waits up to 10 s for got to deliver job id; why says what it shows.
func expectAssigned(t testing.TB, got <-chan *vagrant.Job, id, why string) {
	t.Helper()
	select {
	case j := <-got:
		if j.GetId() != id {
			t.Fatalf("got %v, want %s", j, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal(why)
	}
}

// assertNoAssignment checks that runner gets nothing within d.
func assertNoAssignment(t testing.TB, q *jobqueue.Queue, runner string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	job, err := q.Assign(ctx, runner)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Assign(%s) = %v, %v; want nothing to assign", runner, job.GetId(), err)
	}
}

func getJob(t testing.TB, q *jobqueue.Queue, id string) *vagrant.Job {
	t.Helper()
	j, err := q.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return j
}

// waitState polls until job id is in state want (deadline enforcement is asynchronous).
func waitState(t testing.TB, q *jobqueue.Queue, id string, want vagrant.Job_State, within time.Duration) *vagrant.Job {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		j := getJob(t, q, id)
		if j.GetState() == want {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s after %s, want %s", id, j.GetState(), within, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// outboxEvents decodes the outbox's events of subject, in order.
func outboxEvents[T proto.Message](t testing.TB, pool *pgxpool.Pool, subject string, decoded func() T) []T {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT payload FROM outbox WHERE subject = $1 ORDER BY id`, subject)
	if err != nil {
		t.Fatalf("read outbox: %v", err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			t.Fatalf("scan outbox: %v", err)
		}
		ev := decoded()
		if err := proto.Unmarshal(b, ev); err != nil {
			t.Fatalf("decode event: %v", err)
		}
		out = append(out, ev)
	}
	return out
}

// jobEvents returns the job.state_changed events of id in the outbox, in order.
func jobEvents(t testing.TB, pool *pgxpool.Pool, id string) []*eventsv1.JobStateChanged {
	t.Helper()
	evs := outboxEvents(t, pool, events.SubjectOf(&eventsv1.JobStateChanged{}), func() *eventsv1.JobStateChanged { return &eventsv1.JobStateChanged{} })
	return slices.DeleteFunc(evs, func(ev *eventsv1.JobStateChanged) bool { return ev.GetJobId() != id })
}

// runnerEvents returns the runner.state_changed events of runner id in the outbox, in order.
func runnerEvents(t testing.TB, pool *pgxpool.Pool, id string) []*eventsv1.RunnerStateChanged {
	t.Helper()
	evs := outboxEvents(t, pool, events.SubjectOf(&eventsv1.RunnerStateChanged{}), func() *eventsv1.RunnerStateChanged { return &eventsv1.RunnerStateChanged{} })
	return slices.DeleteFunc(evs, func(ev *eventsv1.RunnerStateChanged) bool { return ev.GetRunnerId() != id })
}

// eventStates lists the states of evs.
func eventStates(evs []*eventsv1.JobStateChanged) []eventsv1.JobState {
	var s []eventsv1.JobState
	for _, e := range evs {
		s = append(s, e.GetState())
	}
	return s
}

// waitChange waits until w reports a change for which ok is true.
func waitChange(t testing.TB, w *jobqueue.Watch, within time.Duration, ok func(jobqueue.Change) bool) jobqueue.Change {
	t.Helper()
	return jobqueuetest.WaitChange(t, w, within, ok)
}
