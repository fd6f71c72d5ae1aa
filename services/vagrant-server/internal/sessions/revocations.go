package sessions

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/backoff"
	"github.com/plinth-dev/plinth/libs/platform/events"
)

// RevocationWriter records that auth revoked a Plinth token.
type RevocationWriter interface {
	// RevokePlinthToken revokes every session token bound to plinthTokenID and refuses any
	// later one, returning how many it revoked. Idempotent.
	RevokePlinthToken(ctx context.Context, plinthTokenID, reason string) (int64, error)
}

// Where auth publishes revocations, as proto/plinth/events/v1/auth.proto declares it.
var (
	authStream          = events.StreamOf(&eventsv1.TokenRevoked{}).Name
	tokenRevokedSubject = events.SubjectOf(&eventsv1.TokenRevoked{})
)

// WatchRevocations writes every Plinth token revocation auth publishes to w, until ctx ends;
// Check reads the database at every call, so a session token is refused on every replica
// once one replica wrote it. Each replica reads the stream with its own ordered consumer, as
// authn.WatchRevocations does (the writes are idempotent), starting catchUp back: a
// revocation published while every replica was down is applied when one comes back, as long
// as catchUp is at least the session tokens' lifetime (a token issued before it has expired
// by then). Until auth's stream exists it retries.
func WatchRevocations(ctx context.Context, js jetstream.JetStream, w RevocationWriter, catchUp time.Duration, log *slog.Logger) {
	bo := backoff.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for {
		cc, err := consumeRevocations(ctx, js, w, time.Now().Add(-catchUp), log)
		if err == nil {
			<-ctx.Done()
			cc.Stop()
			return
		}
		d := bo.Next()
		log.Warn("cannot follow Plinth token revocations yet; retrying", "stream", authStream, "error", err, "retry_in", d)
		if !backoff.Sleep(ctx, d, nil) {
			return
		}
	}
}

func consumeRevocations(ctx context.Context, js jetstream.JetStream, w RevocationWriter, since time.Time, log *slog.Logger) (jetstream.ConsumeContext, error) {
	cons, err := js.OrderedConsumer(ctx, authStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{tokenRevokedSubject},
		DeliverPolicy:  jetstream.DeliverByStartTimePolicy,
		OptStartTime:   &since,
	})
	if err != nil {
		return nil, err
	}
	return cons.Consume(func(m jetstream.Msg) {
		if events.Republished(m.Headers()) {
			log.Warn("ignoring a token.revoked that another stream republished: only auth's own count", "subject", m.Subject())
			return
		}
		var ev eventsv1.TokenRevoked
		if err := proto.Unmarshal(m.Data(), &ev); err != nil || ev.GetTokenId() == "" {
			log.Warn("ignoring malformed token.revoked event", "subject", m.Subject(), "error", err)
			return
		}
		revoke(ctx, w, &ev, log)
	})
}

// revoke writes one revocation, retrying while the database fails: the ordered consumer
// delivers each event once, and a revocation must not be lost.
func revoke(ctx context.Context, w RevocationWriter, ev *eventsv1.TokenRevoked, log *slog.Logger) {
	bo := backoff.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for {
		n, err := w.RevokePlinthToken(ctx, ev.GetTokenId(), ev.GetReason().String())
		if err == nil {
			if n > 0 {
				log.InfoContext(ctx, "revoked Vagrant session tokens with their Plinth token", "user_id", ev.GetUserId(),
					"reason", ev.GetReason().String(), "tokens", n)
			}
			return
		}
		d := bo.Next()
		log.WarnContext(ctx, "recording a Plinth token revocation failed; retrying", "user_id", ev.GetUserId(), "error", err, "retry_in", d)
		if !backoff.Sleep(ctx, d, nil) {
			return
		}
	}
}
