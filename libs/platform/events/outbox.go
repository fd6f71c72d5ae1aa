package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// Event is a domain event to publish.
type Event struct {
	// Subject is the NATS subject: plinth.<service>.<entity>.<verb>. Empty means the one the
	// payload message declares (SubjectOf), which is how services should leave it.
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
	row, err := o.Prepare(ctx, ev)
	if err != nil {
		return "", err
	}
	if err := InsertRows(ctx, tx, []Row{row}); err != nil {
		return "", err
	}
	return row.ID.String(), nil
}

func validateEvent(ev Event) error {
	if ev.Payload == nil {
		return errors.New("events: payload is required")
	}
	return validateRouting(ev.Subject, ev.Type)
}

// validateRouting checks what the relay needs to publish: a valid publish subject (no
// wildcards, no empty tokens) and a ce-type.
func validateRouting(subject, typ string) error {
	switch {
	case subject == "" || strings.ContainsAny(subject, " \t\r\n*>\x00") ||
		strings.HasPrefix(subject, ".") || strings.HasSuffix(subject, ".") || strings.Contains(subject, ".."):
		return fmt.Errorf("events: subject %s is not a valid NATS publish subject", input.Quote(subject))
	case typ == "":
		return errors.New("events: event type (ce-type) is required")
	}
	return nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
