package authn

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
)

// Where auth publishes revocations, as proto/plinth/events/v1/auth.proto declares it.
var (
	authStream          = events.StreamOf(&eventsv1.TokenRevoked{}).Name
	tokenRevokedSubject = events.SubjectOf(&eventsv1.TokenRevoked{})
)

// WatchRevocations drops every token auth revokes from v's cache, until ctx ends; run it in a
// goroutine. It reads the auth stream with an ordered (ephemeral, per-process) consumer starting
// at new messages: every process needs every revocation, so this is deliberately not a shared
// durable consumer, and the ordered consumer recreates itself after a NATS outage without
// skipping messages. Until the auth stream exists (auth not started yet) it retries.
func (v *Verifier) WatchRevocations(ctx context.Context, js jetstream.JetStream) {
	delay := 100 * time.Millisecond
	for {
		cc, err := v.consumeRevocations(ctx, js)
		if err == nil {
			v.watching.Store(true)
			<-ctx.Done()
			cc.Stop()
			v.watching.Store(false)
			return
		}
		v.log.Warn("cannot watch token revocations yet; retrying", "stream", authStream, "error", err, "retry_in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// Watching reports whether revocation events are being received.
func (v *Verifier) Watching() bool { return v.watching.Load() }

func (v *Verifier) consumeRevocations(ctx context.Context, js jetstream.JetStream) (jetstream.ConsumeContext, error) {
	cons, err := js.OrderedConsumer(ctx, authStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{tokenRevokedSubject},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return nil, err
	}
	return cons.Consume(func(m jetstream.Msg) {
		if events.Republished(m.Headers()) {
			v.log.Warn("ignoring a token.revoked that another stream republished: only auth's own count", "subject", m.Subject())
			return
		}
		var ev eventsv1.TokenRevoked
		if err := proto.Unmarshal(m.Data(), &ev); err != nil || ev.GetTokenId() == "" {
			v.log.Warn("ignoring malformed token.revoked event", "subject", m.Subject(), "error", err)
			return
		}
		v.Revoke(ev.GetTokenId())
	})
}
