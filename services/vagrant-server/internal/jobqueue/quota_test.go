package jobqueue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// queueAs queues a noop job for owner on q.
func queueAs(q *jobqueue.Queue, owner string) (string, error) {
	return q.Queue(context.Background(), noopJob(anyRunner()), 0, owner)
}

// refusedAs requires queueing for owner to be refused with the quota's error, holding held.
func refusedAs(t *testing.T, q *jobqueue.Queue, owner string, held, limit int) {
	t.Helper()
	_, err := queueAs(q, owner)
	var qe *jobqueue.QuotaError
	if !errors.As(err, &qe) || qe.Owner != owner || qe.Held != held || qe.Limit != limit {
		t.Fatalf("queueing for %s: %v, want a *QuotaError (held %d of %d)", owner, err, held, limit)
	}
}

// The queue's limit on unfinished jobs per owner, on two replicas of one database: the job
// beyond it is refused on either, and nothing is stored; other owners' jobs are not counted;
// assigned and running jobs count, finished ones do not; queueing racing on both replicas for the last places never takes more.
func TestUnfinishedJobsPerOwner(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	opts := fastOptions()
	opts.MaxUnfinishedPerOwner = 3
	a, b := openReplica(t, db.URL, opts), openReplica(t, db.URL, opts)
	ctx := ctxT(t)
	var ids []string
	for _, q := range []*jobqueue.Queue{a.q, b.q, a.q} {
		id, err := queueAs(q, "alice")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	refusedAs(t, b.q, "alice", 3, 3)
	refusedAs(t, a.q, "alice", 3, 3)
	if n := len(testenv.Must(a.q.List(ctx, jobqueue.Filter{}))(t)); n != 3 {
		t.Fatalf("%d jobs stored, want alice's 3", n)
	}
	if _, err := queueAs(b.q, "bob"); err != nil {
		t.Fatalf("bob: %v", err)
	}

	// Assigned and running jobs count; completed and canceled ones do not.
	register(t, a.q, "r1", false)
	job := assignWithin(t, a.q, "r1", 5*time.Second) // alice's first
	refusedAs(t, a.q, "alice", 3, 3)
	testenv.Must(a.q.Ack(ctx, job.GetId(), "r1"))(t)
	refusedAs(t, b.q, "alice", 3, 3)
	testenv.OK(t, a.q.Complete(ctx, job.GetId(), "r1", nil))
	if _, err := queueAs(b.q, "alice"); err != nil {
		t.Fatalf("after a job completed: %v", err)
	}
	refusedAs(t, a.q, "alice", 3, 3)
	testenv.OK(t, b.q.Cancel(ctx, ids[1], false))
	if _, err := queueAs(a.q, "alice"); err != nil {
		t.Fatalf("after a job was canceled: %v", err)
	}

	// Sixteen jobs of carol at once, on both replicas: three places, three queued.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			q := a.q
			if i%2 == 1 {
				q = b.q
			}
			_, err := queueAs(q, "carol")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	ok := 0
	var qe *jobqueue.QuotaError
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.As(err, &qe):
			t.Fatalf("a racing job: %v", err)
		}
	}
	if ok != 3 {
		t.Fatalf("%d racing jobs queued; 3 places were free", ok)
	}
	queued := len(testenv.Must(a.q.List(ctx, jobqueue.Filter{States: []vagrant.Job_State{vagrant.Job_QUEUED}}))(t))
	if queued != 3+3+1 { // carol's, alice's, bob's
		t.Fatalf("%d queued jobs, want 7", queued)
	}
}
