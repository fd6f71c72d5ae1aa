package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StreamOptions tunes EnsureStream; the zero value gives the defaults.
type StreamOptions struct {
	// Duplicates is the window in which a repeated Nats-Msg-Id is dropped. It must
	// outlast a relay's retry of an event whose ack was lost; default 10m.
	Duplicates time.Duration
	// MaxAge drops events older than this; default 7 days (0 keeps the default,
	// a negative value keeps events forever).
	MaxAge time.Duration
	// Storage defaults to file storage, which survives server restarts.
	Storage jetstream.StorageType
	// Replicas defaults to 1.
	Replicas int
}

// EnsureStream creates the stream, or updates it to this configuration; safe to call at
// every start of every replica.
func EnsureStream(ctx context.Context, js jetstream.JetStream, name string, subjects []string, o StreamOptions) (jetstream.Stream, error) {
	if name == "" || len(subjects) == 0 {
		return nil, errors.New("events: a stream needs a name and at least one subject")
	}
	if o.Duplicates <= 0 {
		o.Duplicates = 10 * time.Minute
	}
	switch {
	case o.MaxAge == 0:
		o.MaxAge = 7 * 24 * time.Hour
	case o.MaxAge < 0:
		o.MaxAge = 0 // unlimited in JetStream terms
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:       name,
		Subjects:   subjects,
		Storage:    o.Storage,
		Duplicates: o.Duplicates,
		MaxAge:     o.MaxAge,
		Replicas:   o.Replicas,
		Retention:  jetstream.LimitsPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("events: ensure stream %s: %w", name, err)
	}
	return s, nil
}

// Connect dials NATS with settings fit for a long-running service: it returns at once even
// when NATS is unreachable and keeps (re)connecting in the background forever — an outage
// only delays events, and a service starts and serves without NATS — and it logs connection
// changes. With credentials it connects as that user; a refusal (wrong password, or a subject
// the user may not publish or read) is logged with the user's name, never the password. opts
// are applied after these defaults.
func Connect(url string, cred Credentials, name string, log *slog.Logger, opts ...nats.Option) (*nats.Conn, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("NATS reconnected", "url", nc.ConnectedUrlRedacted())
		}),
		// Permission violations and authorization failures arrive asynchronously.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			attrs := []any{"err", err}
			if cred.User != "" {
				attrs = append(attrs, "nats_user", cred.User)
			}
			if sub != nil {
				attrs = append(attrs, "subject", sub.Subject)
			}
			log.Error("NATS reported an error for this client (a permissions violation names the subject)", attrs...)
		}),
		// nats.go gives up after the same authorization error twice.
		nats.ClosedHandler(func(nc *nats.Conn) {
			if err := nc.LastError(); errors.Is(err, nats.ErrAuthorization) {
				log.Error("NATS refused this service's credentials and the connection is closed for good: "+
					"events wait in the outbox until the service restarts with the right password", "err", err, "nats_user", cred.User)
			}
		}),
	}
	base = append(base, cred.options()...)
	nc, err := nats.Connect(url, append(base, opts...)...)
	if err != nil {
		if cred.User != "" {
			return nil, fmt.Errorf("events: connect to NATS as user %s: %w", cred.User, err)
		}
		return nil, fmt.Errorf("events: connect to NATS: %w", err)
	}
	return nc, nil
}
