package events

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/plinth-dev/plinth/libs/platform/pg"
)

// errAlreadyProcessed rolls back the transaction of a redelivered event.
var errAlreadyProcessed = errors.New("event already processed")

type permanentError struct{ err error }

func (e permanentError) Error() string { return "permanent: " + e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks a handler error that retrying cannot fix (e.g. an undecodable
// payload): the event is terminated instead of redelivered.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err: err}
}

// handle runs the handler exactly once per event id: the processed_events row and the
// handler's writes commit together, and a redelivery finds the row and only acks.
func (c *Consumer) handle(ctx context.Context, msg jetstream.Msg) {
	if Republished(msg.Headers()) {
		c.Logger.Error("terminating an event another stream republished on this one's subject: only its publisher's own events count",
			"subject", msg.Subject(), "from_stream", msg.Headers().Get(jetstream.StreamHeader))
		c.settle(msg.Term())
		return
	}
	d, err := decode(msg)
	if err != nil {
		c.Logger.Error("terminating malformed event", "subject", msg.Subject(), "err", err)
		c.settle(msg.Term())
		return
	}
	log := c.Logger.With("ce_id", d.ID, "ce_type", d.Type, "delivery", d.NumDelivered)
	hctx := c.Propagator.Extract(ctx, HeaderCarrier(d.Header))
	err = pg.InTx(ctx, c.Pool, func(tx pgx.Tx) error {
		// Inserted first: a concurrent redelivery blocks on this key until we finish,
		// then sees the row.
		tag, err := tx.Exec(ctx, "INSERT INTO processed_events (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
			c.Durable, d.ID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errAlreadyProcessed
		}
		return c.Handler(hctx, tx, d)
	})
	var perm permanentError
	switch {
	case err == nil:
		c.settle(msg.Ack())
	case errors.Is(err, errAlreadyProcessed):
		log.Debug("skipping already processed event")
		c.settle(msg.Ack())
	case errors.As(err, &perm):
		log.Error("event failed permanently; terminating it", "err", err)
		c.settle(msg.Term())
	case ctx.Err() != nil:
		// Shutting down: JetStream redelivers after AckWait; no Nak needed.
	default:
		delay := c.nakDelay(d.NumDelivered)
		log.Warn("event handler failed; redelivering later", "err", err, "retry_in", delay)
		c.settle(msg.NakWithDelay(delay))
	}
}

// nakDelay grows with the delivery count: 1s, 2s, 4s ... up to MaxNakDelay.
func (c *Consumer) nakDelay(delivered uint64) time.Duration {
	d := time.Second << min(max(delivered, 1)-1, 20)
	if d > c.MaxNakDelay {
		d = c.MaxNakDelay
	}
	return d
}

func (c *Consumer) settle(err error) {
	if err != nil {
		// The event is redelivered after AckWait and skipped as already processed.
		c.Logger.Warn("acknowledging event failed", "err", err)
	}
}

// decode reads the CloudEvents binary-mode headers.
func decode(msg jetstream.Msg) (Delivery, error) {
	h := msg.Headers()
	d := Delivery{
		ID:      h.Get(HeaderID),
		Source:  h.Get(HeaderSource),
		Type:    h.Get(HeaderType),
		Subject: msg.Subject(),
		Data:    msg.Data(),
		Header:  h,
	}
	if d.ID == "" {
		return d, errors.New("no ce-id header: not a CloudEvent, and without an id it cannot be deduplicated")
	}
	if t, err := time.Parse(time.RFC3339Nano, h.Get(HeaderTime)); err == nil {
		d.Time = t
	}
	if md, err := msg.Metadata(); err == nil {
		d.NumDelivered = md.NumDelivered
	}
	return d, nil
}
