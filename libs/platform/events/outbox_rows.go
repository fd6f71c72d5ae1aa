package events

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/protobuf/proto"
)

// Row is an event prepared for the outbox: validated, marshalled, with its id and the trace
// context of the request that caused it. A service that commits many changes in one
// transaction (a group commit) prepares each change's events with the context of its own
// request and inserts all of them with one statement (QueueRows).
type Row struct {
	ID          uuid.UUID
	Subject     string
	Type        string
	Payload     []byte
	Traceparent *string
	Tracestate  *string
	CreatedAt   time.Time
}

// Prepare validates and marshals ev (bounded, see bound), gives it an id (ce-id, a UUIDv7)
// and captures the trace context in ctx, as Add does, without writing anything.
func (o Outbox) Prepare(ctx context.Context, ev Event) (Row, error) {
	if ev.Type == "" && ev.Payload != nil {
		ev.Type = string(proto.MessageName(ev.Payload))
	}
	if ev.Subject == "" && ev.Payload != nil {
		ev.Subject = SubjectOf(ev.Payload)
	}
	if err := validateEvent(ev); err != nil {
		return Row{}, err
	}
	payload, err := bound(ev.Payload)
	if err != nil {
		return Row{}, fmt.Errorf("events: marshal %s payload: %w", ev.Type, err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Row{}, fmt.Errorf("events: event id: %w", err)
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
	return Row{ID: id, Subject: ev.Subject, Type: ev.Type, Payload: payload,
		Traceparent: nullable(carrier.Get("traceparent")), Tracestate: nullable(carrier.Get("tracestate")),
		CreatedAt: now().UTC()}, nil
}

// insertRowsSQL inserts rows given as parallel arrays, in array order: the relay publishes
// them in that order.
const insertRowsSQL = `INSERT INTO outbox (event_id, subject, type, payload, traceparent, tracestate, created_at)
	SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::text[], $7::timestamptz[])`

// QueueRows adds the insert of rows, in their order, to b: one statement whatever their
// number. Nothing is queued for no rows.
func QueueRows(b *pgx.Batch, rows []Row) {
	if len(rows) == 0 {
		return
	}
	b.Queue(insertRowsSQL, rowArgs(rows)...)
}

// InsertRows inserts rows, in their order, in tx with one statement.
func InsertRows(ctx context.Context, tx pgx.Tx, rows []Row) error {
	if len(rows) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, insertRowsSQL, rowArgs(rows)...); err != nil {
		return fmt.Errorf("events: insert into outbox (did pg.Open run events.Migrations()?): %w", err)
	}
	return nil
}

func rowArgs(rows []Row) []any {
	ids := make([]uuid.UUID, len(rows))
	subjects := make([]string, len(rows))
	types := make([]string, len(rows))
	payloads := make([][]byte, len(rows))
	parents := make([]*string, len(rows))
	states := make([]*string, len(rows))
	created := make([]time.Time, len(rows))
	for i, r := range rows {
		ids[i], subjects[i], types[i], payloads[i] = r.ID, r.Subject, r.Type, r.Payload
		parents[i], states[i], created[i] = r.Traceparent, r.Tracestate, r.CreatedAt
	}
	return []any{ids, subjects, types, payloads, parents, states, created}
}
