package runner

import (
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

type jobStream = grpc.BidiStreamingClient[vagrant.RunnerJobStreamRequest, vagrant.RunnerJobStreamResponse]

// sender serialises sends on a job stream: output, heartbeats and the final event come from
// different goroutines, and gRPC streams allow one sender at a time.
type sender struct {
	mu     sync.Mutex
	stream jobStream
}

func (s *sender) send(req *vagrant.RunnerJobStreamRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream.Send(req)
}

// Terminal output is sent in batches: at most every flushInterval, or at once when maxBatch
// events wait, so chatty commands do not cost one message per line.
const (
	flushInterval = 100 * time.Millisecond
	maxBatch      = 128
)

// terminal is a job's operation.Output: it stamps events and sends them as Terminal batches.
type terminal struct {
	send func(*vagrant.RunnerJobStreamRequest) error

	mu      sync.Mutex
	pending []*vagrant.GetJobStreamResponse_Terminal_Event
	full    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newTerminal(send func(*vagrant.RunnerJobStreamRequest) error) *terminal {
	t := &terminal{send: send, full: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go t.loop()
	return t
}

// Event queues ev; it is safe for concurrent use.
func (t *terminal) Event(ev *vagrant.GetJobStreamResponse_Terminal_Event) {
	if ev.Timestamp == nil {
		ev.Timestamp = timestamppb.Now()
	}
	t.mu.Lock()
	t.pending = append(t.pending, ev)
	n := len(t.pending)
	t.mu.Unlock()
	if n >= maxBatch {
		select {
		case t.full <- struct{}{}:
		default:
		}
	}
}

func (t *terminal) loop() {
	defer close(t.done)
	tick := time.NewTicker(flushInterval)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			t.flush()
			return
		case <-tick.C:
		case <-t.full:
		}
		t.flush()
	}
}

// flush sends what is queued. A failed send is not retried: a broken stream ends the job
// (the stream watcher notices) and the output cannot be delivered anyway.
func (t *terminal) flush() {
	t.mu.Lock()
	batch := t.pending
	t.pending = nil
	t.mu.Unlock()
	for len(batch) > 0 {
		n := min(len(batch), maxBatch)
		_ = t.send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Terminal{
			Terminal: &vagrant.GetJobStreamResponse_Terminal{Events: batch[:n]},
		}})
		batch = batch[n:]
	}
}

// close sends the rest and stops the flusher; events after close are dropped.
func (t *terminal) close() {
	close(t.stop)
	<-t.done
}
