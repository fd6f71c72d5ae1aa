package pg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ListenOptions configure ListenOnce.
type ListenOptions struct {
	// Channel is the NOTIFY channel, a plain identifier.
	Channel string
	// Listening runs once LISTEN is in effect. Notifications sent before it were not seen, so
	// callers re-check their state here.
	Listening func()
	// Notify receives each notification's payload, in order, on the listening goroutine.
	Notify func(payload string)
	// PingEvery is how long the connection may stay idle before it is proven alive with a
	// query (a half-open TCP connection would otherwise wait forever); default 30s.
	PingEvery time.Duration
}

// ListenOnce takes a dedicated connection from pool, LISTENs on o.Channel and delivers
// notifications until ctx ends (nil) or the connection fails (the error). Callers wrap it in
// their own retry loop with backoff and a polling fallback for the gaps. The connection is
// hijacked: its LISTEN state must never return to the pool.
func ListenOnce(ctx context.Context, pool *pgxpool.Pool, o ListenOptions) error {
	if !identRE.MatchString(o.Channel) {
		return fmt.Errorf("pg: %q is not a valid NOTIFY channel name", o.Channel)
	}
	if o.PingEvery <= 0 {
		o.PingEvery = 30 * time.Second
	}
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire a connection: %w", err)
	}
	conn := pc.Hijack()
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{o.Channel}.Sanitize()); err != nil {
		return fmt.Errorf("LISTEN: %w", err)
	}
	if o.Listening != nil {
		o.Listening()
	}
	for {
		waitCtx, cancel := context.WithTimeout(ctx, o.PingEvery)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		switch {
		case err == nil:
			o.Notify(n.Payload)
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded):
			pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = conn.Exec(pingCtx, "SELECT 1")
			cancel()
			if err != nil {
				return fmt.Errorf("ping the listening connection: %w", err)
			}
		default:
			return fmt.Errorf("wait for notification: %w", err)
		}
	}
}
