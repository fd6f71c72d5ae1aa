package jobqueue_test

import (
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/input/bounds"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// TestBoundsAgree: every Plinth server refuses requests over libs/platform/input/bounds
// before the queue sees them, so the table and the queue's own check name the same number.
func TestBoundsAgree(t *testing.T) {
	if got := bounds.Fields["hashicorp.vagrant.Job.labels"].Max; got != jobqueue.MaxLabels {
		t.Errorf("bounds.Fields[hashicorp.vagrant.Job.labels] is %d; the queue allows %d", got, jobqueue.MaxLabels)
	}
}
