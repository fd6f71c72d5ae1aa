package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/protobuf/proto"
)

// Event is a domain event to publish.
type Event struct {
	// Subject is the NATS subject: plinth.<service>.<entity>.<verb>.
	Subject string
	// Type is the CloudEvents type (ce-type). Empty means the payload's full message name
	// (e.g. "plinth.events.v1.TokenRevoked"), the convention of proto/plinth/events/v1.
	Type string
	// Payload is the event message from proto/plinth/events/v1.
	Payload proto.Message
}

// Outbox writes events into the outbox table of the transaction's schema. The zero
// value is ready to use.
type Outbox struct {
	// Propagator captures the trace context to store with the event; nil means W3C
	// Trace Context (traceparent, tracestate).
	Propagator propagation.TextMapPropagator
	// Now stamps ce-time; nil means time.Now. Tests set it.
	Now func() time.Time
}

// Add inserts ev in tx, so it is published if and only if tx commits, and returns the
// event id (ce-id, a UUIDv7). The current trace context in ctx travels with the event.
func (o Outbox) Add(ctx context.Context, tx pgx.Tx, ev Event) (string, error) {
	if ev.Type == "" && ev.Payload != nil {
		ev.Type = string(proto.MessageName(ev.Payload))
	}
	if err := validateEvent(ev); err != nil {
		return "", err
	}
	payload, err := proto.Marshal(ev.Payload)
	if err != nil {
		return "", fmt.Errorf("events: marshal %s payload: %w", ev.Type, err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("events: event id: %w", err)
	}
	prop := o.Propagator
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	carrier := propagation.MapCarrier{}
	prop.Inject(ctx, carrier)
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	_, err = tx.Exec(ctx, `INSERT INTO outbox (event_id, subject, type, payload, traceparent, tracestate, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		id, ev.Subject, ev.Type, payload, nullable(carrier.Get("traceparent")), nullable(carrier.Get("tracestate")), now().UTC())
	if err != nil {
		return "", fmt.Errorf("events: insert into outbox (did pg.Open run events.Migrations()?): %w", err)
	}
	return id.String(), nil
}

func validateEvent(ev Event) error {
	switch {
	case ev.Subject == "" || strings.ContainsAny(ev.Subject, " \t\r\n*>") ||
		strings.HasPrefix(ev.Subject, ".") || strings.HasSuffix(ev.Subject, ".") || strings.Contains(ev.Subject, ".."):
		return fmt.Errorf("events: subject %q is not a valid NATS publish subject", ev.Subject)
	case ev.Type == "":
		return errors.New("events: event type (ce-type) is required")
	case ev.Payload == nil:
		return errors.New("events: payload is required")
	}
	return nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
