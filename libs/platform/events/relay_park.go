package events

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// errUndeliverable marks an outbox row that no retry can deliver.
var errUndeliverable = errors.New("undeliverable")

// checkRow refuses rows that cannot be published as they are — written by hand or by an older
// build without Outbox.Add's checks: they are parked before any publish is tried.
func checkRow(row outboxRow) error {
	if err := validateRouting(row.subject, row.typ); err != nil {
		return fmt.Errorf("%w: %v", errUndeliverable, err)
	}
	return nil
}

// permanent reports publish errors that no retry can fix: the message is larger than the
// server or the stream accepts, or its subject is invalid.
func permanent(err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, errUndeliverable), errors.Is(err, nats.ErrMaxPayload), errors.Is(err, nats.ErrBadSubject),
		errors.Is(err, nats.ErrInvalidMsg):
		return true
	case errors.As(err, &apiErr):
		// The message is larger than the stream's max_msg_size.
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum
	case strings.Contains(err.Error(), "maximum payload exceeded"):
		return true // the server's own -ERR for an oversized message
	}
	return false
}

// park moves row to outbox_dead_letters with the reason, in tx, so later events flow on.
func (r *Relay) park(ctx context.Context, tx pgx.Tx, row outboxRow, reason error) error {
	_, err := tx.Exec(ctx, `WITH moved AS (DELETE FROM outbox WHERE id = $1 RETURNING *)
		INSERT INTO outbox_dead_letters (id, event_id, subject, type, payload, traceparent, tracestate, created_at, attempts, reason)
		SELECT id, event_id, subject, type, payload, traceparent, tracestate, created_at, attempts + 1, $2 FROM moved`,
		row.id, input.Truncate(reason.Error(), 1024))
	if err != nil {
		return fmt.Errorf("park undeliverable event: %w", err)
	}
	r.parked.Add(1)
	r.log.Error("outbox event is undeliverable; parked in outbox_dead_letters so later events flow on",
		"event_id", row.eventID, "subject", input.Quote(row.subject), "payload_bytes", len(row.payload), "reason", reason)
	return nil
}

// DeadLetters counts the parked events of the relay's schema.
func (r *Relay) DeadLetters(ctx context.Context) (int64, error) {
	var n int64
	err := r.cfg.Pool.QueryRow(ctx, "SELECT count(*) FROM outbox_dead_letters").Scan(&n)
	return n, err
}
