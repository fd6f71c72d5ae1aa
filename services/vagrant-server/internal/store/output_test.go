package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/joboutput"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/joboutput/joboutputtest"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/store"
)

// openOutput opens a store and a job queue on a fresh schema and queues n jobs.
func openOutput(t *testing.T, n int) (*store.Store, *pgxpool.Pool, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := service.OpenPostgres(ctx, testenv.DB(t).URL, store.Schema, store.Migrations, jobqueue.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(pool)
	t.Cleanup(pool.Close)
	q, err := jobqueue.New(ctx, pool, jobqueue.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	var ids []string
	for range n {
		id, err := q.Queue(ctx, &vagrant.Job{TargetRunner: &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Any{Any: &vagrant.Ref_RunnerAny{}}},
			Operation: &vagrant.Job_Noop_{Noop: &vagrant.Job_Noop{}}}, 0, "token:test")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return st, pool, ids
}

func lines(msgs ...string) []*joboutput.Event {
	out := make([]*joboutput.Event, len(msgs))
	for i, m := range msgs {
		out[i] = &joboutput.Event{Timestamp: timestamppb.Now(),
			Event: &vagrant.GetJobStreamResponse_Terminal_Event_Line_{Line: &vagrant.GetJobStreamResponse_Terminal_Event_Line{Msg: m}}}
	}
	return out
}

func entryTexts(es []joboutput.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprintf("%s#%d %s", e.JobID[len(e.JobID)-3:], e.Seq, e.Event.GetLine().GetMsg()))
	}
	return out
}

func TestJobOutputIsStoredInOrderAndNotified(t *testing.T) {
	t.Parallel()
	st, pool, jobs := openOutput(t, 2)
	ctx := context.Background()
	l, err := joboutput.Listen(ctx, pool, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mine, all, other := l.Subscribe(jobs[0]), l.Subscribe(""), l.Subscribe(jobs[1])
	defer mine.Close()
	defer all.Close()
	defer other.Close()

	scope := joboutput.Scope{BasisID: "B", ProjectID: "P"}
	if err := st.AppendOutput(ctx, jobs[0], "r1", scope, 0, lines("a", "b")); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*joboutput.Subscription{"the job's": mine, "everything's": all} {
		select {
		case <-s.C():
		case <-time.After(5 * time.Second):
			t.Fatalf("%s subscriber was not notified of new output", name)
		}
	}
	select {
	case <-other.C():
		t.Fatal("another job's subscriber was notified")
	case <-time.After(200 * time.Millisecond):
	}
	if err := st.AppendOutput(ctx, jobs[0], "r1", scope, 2, lines("c")); err != nil {
		t.Fatal(err)
	}
	// A second writer reusing numbers is refused: a job's output has one writer.
	if err := st.AppendOutput(ctx, jobs[0], "r2", scope, 1, lines("x")); err == nil {
		t.Fatal("output numbers were written twice")
	}
	got, err := st.ReadOutput(ctx, jobs[0], 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	suffix := jobs[0][len(jobs[0])-3:]
	want := []string{suffix + "#1 a", suffix + "#2 b", suffix + "#3 c"}
	if !slices.Equal(entryTexts(got), want) {
		t.Fatalf("output %v, want %v", entryTexts(got), want)
	}
	if after, _ := st.ReadOutput(ctx, jobs[0], 2, 10); len(after) != 1 || !proto.Equal(after[0].Event, got[2].Event) {
		t.Fatalf("output after 2: %v", entryTexts(after))
	}
}

// A log follower misses nothing when writers commit out of order: output of a transaction
// that began before the follower's read but committed after it is still delivered, once.
func TestLogFollowerSeesLateCommits(t *testing.T) {
	t.Parallel()
	st, pool, jobs := openOutput(t, 3)
	ctx := context.Background()
	scope := joboutput.Scope{BasisID: "B", ProjectID: "P"}
	elsewhere := joboutput.Scope{BasisID: "B", ProjectID: "Q"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.AppendOutput(ctx, jobs[0], "r1", scope, 0, lines("old 1", "old 2", "old 3")))
	must(st.AppendOutput(ctx, jobs[2], "r1", elsewhere, 0, lines("other project")))

	// A slow writer: its transaction has written output of jobs[1] but not committed.
	slow, err := pool.Begin(ctx)
	must(err)
	defer slow.Rollback(ctx)
	_, err = slow.Exec(ctx, `INSERT INTO job_scope (job_id, runner_id, basis_id, project_id) VALUES ($1, 'r2', 'B', 'P')`, jobs[1])
	must(err)
	b, _ := proto.Marshal(lines("late")[0])
	_, err = slow.Exec(ctx, `INSERT INTO job_output (job_id, seq, time, event) VALUES ($1, 1, now(), $2)`, jobs[1], b)
	must(err)

	backlog, cur, err := st.LogBacklog(ctx, scope, 2, joboutput.LineCount)
	must(err)
	suffix0, suffix1 := jobs[0][len(jobs[0])-3:], jobs[1][len(jobs[1])-3:]
	if want := []string{suffix0 + "#2 old 2", suffix0 + "#3 old 3"}; !slices.Equal(entryTexts(backlog), want) {
		t.Fatalf("backlog %v, want %v", entryTexts(backlog), want)
	}
	must(st.AppendOutput(ctx, jobs[0], "r1", scope, 3, lines("new")))
	got, cur, err := st.LogSince(ctx, scope, cur, 100)
	must(err)
	if want := []string{suffix0 + "#4 new"}; !slices.Equal(entryTexts(got), want) {
		t.Fatalf("first follow: %v, want %v", entryTexts(got), want)
	}
	must(slow.Commit(ctx))
	got, cur, err = st.LogSince(ctx, scope, cur, 100)
	must(err)
	if want := []string{suffix1 + "#1 late"}; !slices.Equal(entryTexts(got), want) {
		t.Fatalf("after the slow commit: %v, want %v", entryTexts(got), want)
	}
	if got[0].Runner != "r2" {
		t.Fatalf("runner of the late line: %q", got[0].Runner)
	}
	// Pages: a cut-off read keeps its place.
	must(st.AppendOutput(ctx, jobs[0], "r1", scope, 4, lines("p1", "p2", "p3")))
	page1, cur, err := st.LogSince(ctx, scope, cur, 2)
	must(err)
	page2, _, err := st.LogSince(ctx, scope, cur, 2)
	must(err)
	if got := append(entryTexts(page1), entryTexts(page2)...); !slices.Equal(got, []string{suffix0 + "#5 p1", suffix0 + "#6 p2", suffix0 + "#7 p3"}) {
		t.Fatalf("paged follow: %v", got)
	}
	whole, _, err := st.LogBacklog(ctx, scope, -1, joboutput.LineCount)
	must(err)
	if len(whole) != 8 {
		t.Fatalf("whole backlog: %v", entryTexts(whole))
	}
}

// outputStore is the Postgres job output store with the job queue its jobs come from.
type outputStore struct {
	*store.Store
	q *jobqueue.Queue
}

// NewJob queues a noop job: output references the queue's jobs.
func (s *outputStore) NewJob(t *testing.T) string {
	t.Helper()
	id, err := s.q.Queue(context.Background(), &vagrant.Job{TargetRunner: &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Any{Any: &vagrant.Ref_RunnerAny{}}},
		Operation: &vagrant.Job_Noop_{Noop: &vagrant.Job_Noop{}}}, 0, "token:test")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestJobOutputStoreConformance runs the job output store's suite on Postgres, plain and
// reopening the store (a new pool on the same database) mid-test.
func TestJobOutputStoreConformance(t *testing.T) {
	factory, reopen := testenv.Reopenable(func(t *testing.T, url string) (joboutputtest.Store, func()) {
		ctx := context.Background()
		pool, err := service.OpenPostgres(ctx, url, store.Schema, store.Migrations, jobqueue.Migrations())
		if err != nil {
			t.Fatal(err)
		}
		q, err := jobqueue.New(ctx, pool, jobqueue.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			pool.Close()
			t.Fatal(err)
		}
		return &outputStore{Store: store.New(pool), q: q}, func() { q.Close(); pool.Close() }
	})
	joboutputtest.Run(t, factory, reopen)
}
