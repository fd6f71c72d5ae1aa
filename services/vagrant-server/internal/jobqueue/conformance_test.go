package jobqueue_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	vgrpc "github.com/plinth-dev/plinth/services/vagrant-server/internal/grpc"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue/jobqueuetest"
)

// TestQueueConformance runs the job queue's suite on Postgres, plain and reopening the queue
// (a new pool and Queue on the same database, the old ones closed) mid-test. Assign polls
// only every minute, so a waiting runner must be woken by the NOTIFY of a queued job.
func TestQueueConformance(t *testing.T) {
	factory, reopen := testenv.Reopenable(func(t *testing.T, url string) (vgrpc.JobQueue, func()) {
		r := openReplica(t, url, jobqueue.Options{PollInterval: time.Minute, Logger: slog.New(slog.DiscardHandler)})
		return r.q, r.close
	})
	jobqueuetest.Run(t, factory, reopen)
}
