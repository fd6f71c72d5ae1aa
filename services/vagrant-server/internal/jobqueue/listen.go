package jobqueue

import (
	"context"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/pg"
)

// notifyChannel is the NOTIFY channel of jobs_notify(), shared by every schema.
const notifyChannel = "plinth_jobqueue"

// listen keeps a LISTEN connection open until ctx ends, reconnecting with backoff. ready is
// closed after the first attempt, successful or not.
func (q *Queue) listen(ctx context.Context, ready chan struct{}) {
	var once sync.Once
	signalReady := func() { once.Do(func() { close(ready) }) }
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := q.listenOnce(ctx, func() {
			signalReady()
			backoff = 100 * time.Millisecond
		})
		signalReady()
		if ctx.Err() != nil {
			return
		}
		q.opts.Logger.WarnContext(ctx, "job queue: LISTEN connection lost; Assign polls until it is back",
			"error", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// listenOnce listens on one connection until it fails or ctx ends. Changes made while no
// connection listened were not notified here, hence the resync once listening.
func (q *Queue) listenOnce(ctx context.Context, listening func()) error {
	return pg.ListenOnce(ctx, q.pool, pg.ListenOptions{
		Channel:   notifyChannel,
		Listening: func() { listening(); q.resync(ctx) },
		Notify:    func(payload string) { q.handleNotification(ctx, payload) },
		PingEvery: q.opts.ListenCheckInterval,
	})
}

func (q *Queue) handleNotification(ctx context.Context, payload string) {
	n, err := parseNotification(payload)
	if err != nil {
		q.opts.Logger.WarnContext(ctx, "job queue: ignoring a notification", "error", err)
		return
	}
	if n.Schema != q.schema {
		return
	}
	q.hub.dispatch(n)
}

// resync wakes every blocked Assign and re-reads every watched job.
func (q *Queue) resync(ctx context.Context) {
	q.hub.wakeAll()
	ids := q.hub.watchedIDs()
	if len(ids) == 0 {
		return
	}
	readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cs, err := q.readChanges(readCtx, ids)
	if err != nil {
		q.opts.Logger.WarnContext(ctx, "job queue: refreshing watched jobs failed", "error", err)
		return
	}
	for _, c := range cs {
		q.hub.deliverAll(c)
	}
}
