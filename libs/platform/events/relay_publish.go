package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/plinth-dev/plinth/libs/platform/backoff"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/platform/pg"
)

var errNATSDisconnected = errors.New("not connected to NATS")

type outboxRow struct {
	id          int64
	eventID     uuid.UUID
	subject     string
	typ         string
	payload     []byte
	traceparent *string
	tracestate  *string
	createdAt   time.Time
}

// publishBatch claims up to BatchSize unsent rows, publishes them in order and marks the
// acknowledged ones sent, all in one transaction, and returns how many rows it settled. It
// stops at the first failure so a later event never overtakes an earlier one from the same
// relay — except a row no retry could deliver (too large, malformed), which is parked in
// outbox_dead_letters and skipped.
func (r *Relay) publishBatch(ctx context.Context) (int, error) {
	tx, err := r.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, `SELECT id, event_id, subject, type, payload, traceparent, tracestate, created_at
		FROM outbox WHERE sent_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, r.cfg.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("select unsent: %w", err)
	}
	batch, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (outboxRow, error) {
		var o outboxRow
		err := row.Scan(&o.id, &o.eventID, &o.subject, &o.typ, &o.payload, &o.traceparent, &o.tracestate, &o.createdAt)
		return o, err
	})
	if err != nil {
		return 0, fmt.Errorf("select unsent: %w", err)
	}
	if len(batch) == 0 {
		return 0, nil
	}
	var sent []int64
	var pubErr error
	parked := 0
	for _, row := range batch {
		err := checkRow(row)
		if err == nil {
			err = r.publish(ctx, row)
		}
		if err != nil && permanent(err) {
			// No retry can deliver it: park it, so the events after it are not held back.
			if err := r.park(ctx, tx, row, err); err != nil {
				return 0, err
			}
			parked++
			continue
		}
		if pubErr = err; pubErr != nil {
			// Recorded for operators looking at a stuck row.
			if _, err := tx.Exec(ctx, "UPDATE outbox SET attempts = attempts + 1, last_error = $2 WHERE id = $1",
				row.id, input.Truncate(pubErr.Error(), 1024)); err != nil {
				return 0, fmt.Errorf("record failure: %w", err)
			}
			pubErr = fmt.Errorf("publish %s (%s): %w", row.eventID, input.Quote(row.subject), pubErr)
			break
		}
		sent = append(sent, row.id)
	}
	if len(sent) > 0 {
		if _, err := tx.Exec(ctx, "UPDATE outbox SET sent_at = now() WHERE id = ANY($1)", sent); err != nil {
			return 0, fmt.Errorf("mark sent: %w", err)
		}
	}
	// If this commit fails the rows are published again later; Nats-Msg-Id makes the
	// stream drop the copies.
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	r.published.Add(uint64(len(sent)))
	return len(sent) + parked, pubErr
}

// publish sends one row and waits for the stream's acknowledgement.
func (r *Relay) publish(ctx context.Context, row outboxRow) error {
	// While disconnected nats.go would buffer the message and we would time out waiting
	// for its ack; fail fast instead and let the backoff pace the retries.
	if !r.cfg.JetStream.Conn().IsConnected() {
		return errNATSDisconnected
	}
	msg := nats.NewMsg(row.subject)
	msg.Data = row.payload
	id := row.eventID.String()
	msg.Header.Set(HeaderSpecVersion, SpecVersion)
	msg.Header.Set(HeaderID, id)
	msg.Header.Set(HeaderSource, r.cfg.Source)
	msg.Header.Set(HeaderType, row.typ)
	msg.Header.Set(HeaderTime, row.createdAt.UTC().Format(time.RFC3339Nano))
	msg.Header.Set(HeaderContentType, ContentTypeProtobuf)
	if row.traceparent != nil {
		msg.Header.Set("traceparent", *row.traceparent)
	}
	if row.tracestate != nil {
		msg.Header.Set("tracestate", *row.tracestate)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
	defer cancel()
	_, err := r.cfg.JetStream.PublishMsg(ctx, msg, jetstream.WithMsgID(id))
	return err
}

// listen turns NOTIFYs for this schema's outbox into wake-ups, reconnecting after
// errors; the poll interval covers the gaps.
func (r *Relay) listen(ctx context.Context, schema string) {
	bo := backoff.Backoff{Min: r.cfg.MinBackoff, Max: r.cfg.MaxBackoff}
	for ctx.Err() == nil {
		err := r.listenOnce(ctx, schema)
		if ctx.Err() != nil {
			return
		}
		d := bo.Next()
		r.log.Warn("outbox LISTEN connection lost; polling until it is back", "err", err, "retry_in", d)
		backoff.Sleep(ctx, d, nil)
	}
}

// listenOnce listens until the connection fails or ctx ends. Rows inserted before LISTEN took
// effect produced no notification we saw, hence the signal once listening.
func (r *Relay) listenOnce(ctx context.Context, schema string) error {
	return pg.ListenOnce(ctx, r.cfg.Pool, pg.ListenOptions{
		Channel:   "plinth_outbox",
		Listening: r.signal,
		Notify: func(payload string) {
			if payload == schema {
				r.signal()
			}
		},
	})
}

func (r *Relay) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}
