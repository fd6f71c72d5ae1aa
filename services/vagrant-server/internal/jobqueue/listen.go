package jobqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
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

// listenOnce listens on one connection until it fails or ctx ends.
func (q *Queue) listenOnce(ctx context.Context, listening func()) error {
	pc, err := q.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire a connection: %w", err)
	}
	// Hijacked: the connection's LISTEN state must never go back to the pool.
	conn := pc.Hijack()
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return fmt.Errorf("LISTEN: %w", err)
	}
	listening()
	// Changes made while no connection listened were not notified here.
	q.resync(ctx)
	for {
		waitCtx, cancel := context.WithTimeout(ctx, q.opts.ListenCheckInterval)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		switch {
		case err == nil:
			q.handleNotification(ctx, n.Payload)
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded):
			// Idle: a timeout leaves the connection usable; prove it is still alive.
			pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = conn.Exec(pingCtx, "SELECT 1")
			cancel()
			if err != nil {
				return fmt.Errorf("ping: %w", err)
			}
		default:
			return fmt.Errorf("wait for notification: %w", err)
		}
	}
}

func (q *Queue) handleNotification(ctx context.Context, payload string) {
	var n notification
	if err := json.Unmarshal([]byte(payload), &n); err != nil {
		q.opts.Logger.WarnContext(ctx, "job queue: ignoring malformed notification", "error", err)
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
