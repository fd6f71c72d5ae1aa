package joboutput

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobsubs"
)

// notifyChannel is the NOTIFY channel of job_output_notify(), shared by every schema.
const notifyChannel = "plinth_joboutput"

// listenCheckInterval is how often an idle LISTEN connection is pinged, so a dead one is
// replaced instead of silently delivering nothing.
const listenCheckInterval = 15 * time.Second

// Listener tells this replica's readers that jobs have new output, whichever replica wrote
// it. It holds one connection of the pool for its lifetime.
type Listener struct {
	pool   *pgxpool.Pool
	log    *slog.Logger
	schema string
	stop   context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	subs jobsubs.Sets[*Subscription] // by job id; "" follows every job
}

// Listen starts listening on pool (whose search_path is the service's schema) and returns
// once the first LISTEN was tried; should it fail, the listener keeps retrying and readers
// fall back to polling meanwhile. Close stops it.
func Listen(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) (*Listener, error) {
	l := &Listener{pool: pool, log: log, done: make(chan struct{}), subs: jobsubs.Sets[*Subscription]{}}
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&l.schema); err != nil {
		return nil, fmt.Errorf("joboutput: find the schema: %w", err)
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	l.stop = stop
	ready := make(chan struct{})
	go func() {
		defer close(l.done)
		l.run(runCtx, ready)
	}()
	select {
	case <-ready:
		return l, nil
	case <-ctx.Done():
		l.Close()
		return nil, ctx.Err()
	}
}

// Close stops listening; subscriptions stay valid but only polling wakes their readers.
func (l *Listener) Close() {
	l.stop()
	<-l.done
}

// Subscription wakes one reader when output it follows may have arrived.
type Subscription struct {
	l     *Listener
	jobID string
	c     chan struct{}
}

// Subscribe follows job jobID's output; "" follows every job of the schema (log streams,
// which then read their scope). Subscribe before reading, so output stored after the read
// is signaled. Close it when done.
func (l *Listener) Subscribe(jobID string) *Subscription {
	s := &Subscription{l: l, jobID: jobID, c: make(chan struct{}, 1)}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subs.Add(jobID, s)
	return s
}

// C receives when new output may be there; signals coalesce.
func (s *Subscription) C() <-chan struct{} { return s.c }

// Close stops the signals.
func (s *Subscription) Close() {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	s.l.subs.Remove(s.jobID, s)
}

func (s *Subscription) signal() {
	select {
	case s.c <- struct{}{}:
	default:
	}
}

// wake signals the subscribers of jobs (nil: every subscriber) and those following all.
func (l *Listener) wake(jobs []string, all bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if all {
		for _, set := range l.subs {
			for s := range set {
				s.signal()
			}
		}
		return
	}
	for _, id := range append(jobs, "") {
		for s := range l.subs[id] {
			s.signal()
		}
	}
}

// run keeps a LISTEN connection until ctx ends, reconnecting with backoff.
func (l *Listener) run(ctx context.Context, ready chan struct{}) {
	var once sync.Once
	signalReady := func() { once.Do(func() { close(ready) }) }
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.listenOnce(ctx, func() { signalReady(); backoff = 100 * time.Millisecond })
		signalReady()
		if ctx.Err() != nil {
			return
		}
		l.log.WarnContext(ctx, "job output: LISTEN connection lost; readers poll until it is back", "error", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// listenOnce listens on one connection until it fails or ctx ends. Output stored while nobody
// listened was not signaled: every reader is woken before ready, so a subscription made after
// Listen returns starts quiet.
func (l *Listener) listenOnce(ctx context.Context, listening func()) error {
	return pg.ListenOnce(ctx, l.pool, pg.ListenOptions{
		Channel:   notifyChannel,
		Listening: func() { l.wake(nil, true); listening() },
		Notify:    func(payload string) { l.handle(ctx, payload) },
		PingEvery: listenCheckInterval,
	})
}

func (l *Listener) handle(ctx context.Context, payload string) {
	var n struct {
		Schema string   `json:"schema"`
		Jobs   []string `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(payload), &n); err != nil {
		l.log.WarnContext(ctx, "job output: ignoring malformed notification", "error", err)
		return
	}
	if n.Schema == l.schema {
		l.wake(n.Jobs, false)
	}
}
