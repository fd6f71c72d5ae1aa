package vagrant

import (
	"context"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// queueRecorder is a vagrant-server that records the jobs queued on it.
type queueRecorder struct {
	vagrant.UnimplementedVagrantServer
	queued chan *vagrant.Job
}

func (s *queueRecorder) QueueJob(_ context.Context, req *vagrant.QueueJobRequest) (*vagrant.QueueJobResponse, error) {
	s.queued <- req.GetJob()
	return &vagrant.QueueJobResponse{JobId: "J1"}, nil
}

// kaas's jobs go to the runner id reserved for it when one is configured (so provisioning
// never waits behind other clients' jobs), and to any runner otherwise.
func TestQueueTargetsTheReservedRunner(t *testing.T) {
	rec := &queueRecorder{queued: make(chan *vagrant.Job, 2)}
	conn := serveVagrant(t, rec)
	token := func() (string, error) { return "token", nil }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if _, err := NewClient(conn, token, "kaas-reserved").queue(ctx, "T1", "up", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := (<-rec.queued).GetTargetRunner().GetId().GetId(); got != "kaas-reserved" {
		t.Errorf("job targets runner %q, want the reserved kaas-reserved", got)
	}
	if _, err := NewClient(conn, token, "").queue(ctx, "T1", "up", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if job := <-rec.queued; job.GetTargetRunner().GetAny() == nil {
		t.Errorf("job without a reserved runner targets %v, want any runner", job.GetTargetRunner())
	}
}
