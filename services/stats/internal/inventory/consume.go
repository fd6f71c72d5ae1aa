package inventory

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/plinth-dev/plinth/libs/platform/backoff"
	"github.com/plinth-dev/plinth/libs/platform/events"
)

// Durable consumer names; JetStream remembers each one's position, so a restart resumes where
// the last run acknowledged.
const (
	LVMDDurable = "stats_inventory_lvmd"
	KaasDurable = "stats_inventory_kaas"
)

// Consumers are the inventory's two durable consumers: lvmd-agent's heartbeats and capacity,
// kaas's machines and clusters.
func Consumers(js jetstream.JetStream, pool *pgxpool.Pool, h Handler, log *slog.Logger) []events.Consumer {
	return []events.Consumer{
		{JetStream: js, Pool: pool, Stream: LVMDStream.Name, Durable: LVMDDurable, FilterSubjects: LVMDSubjects, Handler: h.Handle, Logger: log},
		{JetStream: js, Pool: pool, Stream: KaasStream.Name, Durable: KaasDurable, FilterSubjects: KaasSubjects, Handler: h.Handle, Logger: log},
	}
}

// Run runs c until ctx ends. Its publisher may start after stats (or not at all): until the
// stream exists, Run waits for it; if the consumer stops (the stream was deleted), Run starts
// over. Either is logged once per occurrence, and never ends the service.
func Run(ctx context.Context, c events.Consumer) error {
	log := c.Logger.With("stream", c.Stream, "durable", c.Durable)
	bo := backoff.Backoff{Min: 500 * time.Millisecond, Max: 30 * time.Second}
	waiting := false
	for ctx.Err() == nil {
		_, err := c.JetStream.Stream(ctx, c.Stream)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			if !waiting {
				log.Info("waiting for the publisher to create its stream")
				waiting = true
			}
		case err != nil:
			log.Debug("looking up the stream failed; retrying", "err", err)
		default:
			waiting = false
			if err := c.Run(ctx); err != nil && ctx.Err() == nil {
				log.Warn("the inventory consumer stopped; starting over", "err", err)
			}
			bo.Reset()
		}
		backoff.Sleep(ctx, bo.Next(), nil)
	}
	return nil
}
