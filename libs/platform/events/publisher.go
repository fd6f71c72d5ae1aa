package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// PublisherConfig names what a publishing service needs on NATS.
type PublisherConfig struct {
	// URL is the NATS server.
	URL string
	// Credentials are the service's NATS user, when the server requires one.
	Credentials Credentials
	// Service names the client ("plinth-<Service>") and the events' ce-source ("plinth/<Service>").
	Service string
	// Stream is the service's own JetStream stream, as its events file declares it:
	// StreamOf(&eventsv1.TokenRevoked{}) is {"PLINTH_AUTH", ["plinth.auth.>"]}.
	Stream Stream
	// Pool reaches the schema whose outbox the relay publishes.
	Pool   *pgxpool.Pool
	Logger *slog.Logger
	// Relay tunes the relay (intervals, backoff, batch size); its connection, stream and
	// source fields are set by OpenPublisher.
	Relay RelayConfig
}

// Publisher is a service's NATS side: the connection, JetStream, its ensured stream and the
// relay for its outbox (run it with Relay.Run; close Conn last).
type Publisher struct {
	Conn      *nats.Conn
	JetStream jetstream.JetStream
	Relay     *Relay
}

// OpenPublisher prepares the service's NATS side without needing NATS to be there: the
// connection retries in the background, and the relay ensures the stream (and checks for
// events an earlier run may have published) once NATS answers, and again after each
// reconnect it is woken at once rather than at the end of its backoff. Until then events wait
// in the outbox. On error nothing is left open.
func OpenPublisher(ctx context.Context, c PublisherConfig) (_ *Publisher, err error) {
	if c.Service == "" {
		return nil, errors.New("events: a publisher needs the service's name")
	}
	if c.Stream.Name == "" || len(c.Stream.Subjects) == 0 {
		return nil, errors.New("events: a publisher needs its stream (events.StreamOf of one of its payloads)")
	}
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var relay atomic.Pointer[Relay]
	wake := func(nc *nats.Conn) {
		log.Info("NATS connected", "url", nc.ConnectedUrlRedacted())
		if r := relay.Load(); r != nil {
			r.Reconnected()
		}
	}
	nc, err := Connect(c.URL, c.Credentials, "plinth-"+c.Service, log, nats.ConnectHandler(wake), nats.ReconnectHandler(wake))
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
	rc := c.Relay
	rc.Pool, rc.JetStream, rc.Source, rc.Logger, rc.Stream = c.Pool, js, "plinth/"+c.Service, c.Logger, c.Stream.Name
	rc.EnsureStream = func(ctx context.Context) error {
		_, err := EnsureStream(ctx, js, c.Stream.Name, c.Stream.Subjects, StreamOptions{Duplicates: rc.DuplicateWindow})
		return err
	}
	r, err := NewRelay(rc)
	if err != nil {
		return nil, err
	}
	relay.Store(r)
	return &Publisher{Conn: nc, JetStream: js, Relay: r}, nil
}
