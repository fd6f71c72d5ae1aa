package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/propagation"

	"github.com/plinth-dev/plinth/libs/platform/backoff"
)

// Delivery is a received event: its CloudEvents metadata and protobuf payload.
type Delivery struct {
	ID      string    // ce-id
	Source  string    // ce-source
	Type    string    // ce-type
	Time    time.Time // ce-time (zero when absent or malformed)
	Subject string    // NATS subject
	Data    []byte    // payload; proto.Unmarshal it into the message ce-type names
	Header  nats.Header
	// NumDelivered is 1 on first delivery and grows with every redelivery.
	NumDelivered uint64
}

// Handler applies one event inside tx. Returning nil commits tx (with the record that
// the event was processed) and acks; an error rolls back and redelivers later, unless
// it is Permanent.
type Handler func(ctx context.Context, tx pgx.Tx, d Delivery) error

// Consumer is a durable JetStream pull consumer whose handler runs exactly once per
// event id. JetStream, Pool, Stream, Durable and Handler are required.
type Consumer struct {
	JetStream jetstream.JetStream
	// Pool reaches the schema holding processed_events (events.Migrations()).
	Pool *pgxpool.Pool
	// Stream and Durable name the stream and the durable consumer (created or updated).
	Stream, Durable string
	// FilterSubjects limits the subjects delivered; empty means the whole stream.
	FilterSubjects []string
	Handler        Handler
	// Logger; nil discards.
	Logger *slog.Logger
	// AckWait is how long a delivery may take before JetStream redelivers it; default 30s.
	AckWait time.Duration
	// MaxBuffered is how many delivered events wait client-side for the handler;
	// default 10. AckWait runs for them too, so keep MaxBuffered × handler time well
	// under AckWait or they are redelivered (harmlessly, but wastefully).
	MaxBuffered int
	// MaxNakDelay caps the growing delay before a failed event is retried; default 1m.
	MaxNakDelay time.Duration
	// Retention keeps processed ids this long, far beyond any redelivery; default 7 days.
	Retention time.Duration
	// Propagator extracts the trace context from headers; nil means W3C Trace Context.
	Propagator propagation.TextMapPropagator
}

// Consume runs a Consumer with default settings until ctx is done.
func Consume(ctx context.Context, js jetstream.JetStream, pool *pgxpool.Pool, stream, durable string, filterSubjects []string, h Handler) error {
	return Consumer{JetStream: js, Pool: pool, Stream: stream, Durable: durable, FilterSubjects: filterSubjects, Handler: h}.Run(ctx)
}

// Run consumes until ctx is done, then returns nil. NATS outages are waited out.
func (c Consumer) Run(ctx context.Context) error {
	if err := c.defaults(); err != nil {
		return err
	}
	cons, err := c.ensureConsumer(ctx)
	if err != nil || cons == nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(c.MaxBuffered))
	if err != nil {
		return fmt.Errorf("events: consume %s/%s: %w", c.Stream, c.Durable, err)
	}
	defer it.Stop()
	var lastPrune time.Time
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
			return fmt.Errorf("events: consumer %s/%s stopped: %w", c.Stream, c.Durable, err)
		}
		if err != nil {
			c.Logger.Warn("receiving events failed; retrying", "err", err)
			backoff.Sleep(ctx, time.Second, nil)
			continue
		}
		c.handle(ctx, msg)
		if time.Since(lastPrune) >= c.Retention/10 {
			c.prune(ctx)
			lastPrune = time.Now()
		}
	}
}

func (c *Consumer) defaults() error {
	switch {
	case c.JetStream == nil || c.Pool == nil || c.Handler == nil:
		return errors.New("events: Consumer needs JetStream, Pool and Handler")
	case c.Stream == "" || c.Durable == "":
		return errors.New("events: Consumer needs Stream and Durable names")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Logger = c.Logger.With("component", "event-consumer", "stream", c.Stream, "durable", c.Durable)
	if c.AckWait <= 0 {
		c.AckWait = 30 * time.Second
	}
	if c.MaxBuffered <= 0 {
		c.MaxBuffered = 10
	}
	if c.MaxNakDelay <= 0 {
		c.MaxNakDelay = time.Minute
	}
	if c.Retention <= 0 {
		c.Retention = 7 * 24 * time.Hour
	}
	if c.Propagator == nil {
		c.Propagator = propagation.TraceContext{}
	}
	return nil
}

// ensureConsumer creates or updates the durable consumer, retrying while NATS is
// unreachable. It returns (nil, nil) when ctx ends first.
func (c *Consumer) ensureConsumer(ctx context.Context) (jetstream.Consumer, error) {
	cfg := jetstream.ConsumerConfig{
		Durable:       c.Durable,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.AckWait,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		MaxDeliver:    -1,
	}
	// A single filter uses the older field, understood by pre-2.10 servers too.
	if len(c.FilterSubjects) == 1 {
		cfg.FilterSubject = c.FilterSubjects[0]
	} else {
		cfg.FilterSubjects = c.FilterSubjects
	}
	bo := backoff.Backoff{Min: 100 * time.Millisecond, Max: 10 * time.Second}
	for {
		cons, err := c.JetStream.CreateOrUpdateConsumer(ctx, c.Stream, cfg)
		if err == nil {
			return cons, nil
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("events: consumer %s: stream %s does not exist (its publisher creates it with EnsureStream): %w", c.Durable, c.Stream, err)
		}
		d := bo.Next()
		c.Logger.Warn("creating consumer failed; retrying", "err", err, "retry_in", d)
		backoff.Sleep(ctx, d, nil)
	}
}

// prune forgets processed ids older than Retention.
func (c *Consumer) prune(ctx context.Context) {
	_, err := c.Pool.Exec(ctx, "DELETE FROM processed_events WHERE consumer = $1 AND processed_at < now() - make_interval(secs => $2)",
		c.Durable, c.Retention.Seconds())
	if err != nil && ctx.Err() == nil {
		c.Logger.Warn("pruning processed event ids failed", "err", err)
	}
}
