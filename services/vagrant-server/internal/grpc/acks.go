package grpc

import (
	"context"
	"sync"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// pendingAcks are the acks this replica is committing. vagrant-runner starts a job only once
// GetJob shows its ack recorded, and asks right after acknowledging: a GetJob that finds the
// job's ack on its way waits for the commit and answers with the job as committed, instead
// of reading the job before the ack lands (and being asked again).
type pendingAcks struct {
	mu sync.Mutex
	m  map[string]*pendingAck
}

// pendingAck is one ack being committed; job is set (nil when the ack failed) before done
// closes.
type pendingAck struct {
	done chan struct{}
	job  *vagrant.Job
}

func newPendingAcks() *pendingAcks { return &pendingAcks{m: map[string]*pendingAck{}} }

// start records that job id's ack is being committed.
func (p *pendingAcks) start(id string) *pendingAck {
	a := &pendingAck{done: make(chan struct{})}
	p.mu.Lock()
	p.m[id] = a
	p.mu.Unlock()
	return a
}

// finish records the outcome of a's commit: the acknowledged job, or nil.
func (p *pendingAcks) finish(id string, a *pendingAck, job *vagrant.Job) {
	p.mu.Lock()
	if p.m[id] == a {
		delete(p.m, id)
	}
	p.mu.Unlock()
	a.job = job
	close(a.done)
}

// drop finishes a (if any) as failed: its message was not committed.
func (p *pendingAcks) drop(id string, a *pendingAck) {
	if a != nil {
		p.finish(id, a, nil)
	}
}

// await waits for job id's ack when one is being committed here and returns the job as
// acknowledged; nil when there is none (or it failed, or ctx ended): read the job instead.
func (p *pendingAcks) await(ctx context.Context, id string) *vagrant.Job {
	p.mu.Lock()
	a := p.m[id]
	p.mu.Unlock()
	if a == nil {
		return nil
	}
	select {
	case <-a.done:
		return a.job
	case <-ctx.Done():
		return nil
	}
}
