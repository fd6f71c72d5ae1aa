package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// PublisherConfig names what a publishing service needs on NATS.
type PublisherConfig struct {
	// URL is the NATS server.
	URL string
	// Service names the client ("plinth-<Service>") and the events' ce-source ("plinth/<Service>").
	Service string
	// Stream is the service's own JetStream stream and Subjects what it captures
	// (e.g. "PLINTH_AUTH", ["plinth.auth.>"]).
	Stream   string
	Subjects []string
	// Pool reaches the schema whose outbox the relay publishes.
	Pool   *pgxpool.Pool
	Logger *slog.Logger
}

// Publisher is a service's NATS side: the connection, JetStream, its ensured stream and the
// relay for its outbox (run it with Relay.Run; close Conn last).
type Publisher struct {
	Conn      *nats.Conn
	JetStream jetstream.JetStream
	Relay     *Relay
}

// OpenPublisher connects, ensures the stream and prepares the relay; on error nothing is left
// open.
func OpenPublisher(ctx context.Context, c PublisherConfig) (_ *Publisher, err error) {
	if c.Service == "" {
		return nil, errors.New("events: a publisher needs the service's name")
	}
	nc, err := Connect(c.URL, "plinth-"+c.Service, c.Logger)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			nc.Close()
		}
	}()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("events: jetstream: %w", err)
	}
	if _, err := EnsureStream(ctx, js, c.Stream, c.Subjects, StreamOptions{}); err != nil {
		return nil, err
	}
	relay, err := NewRelay(RelayConfig{Pool: c.Pool, JetStream: js, Source: "plinth/" + c.Service, Logger: c.Logger})
	if err != nil {
		return nil, err
	}
	return &Publisher{Conn: nc, JetStream: js, Relay: relay}, nil
}
