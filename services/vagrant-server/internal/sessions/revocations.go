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
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// RevocationWriter records that auth revoked a Plinth token.
type RevocationWriter interface {
	// RevokePlinthToken revokes every session token bound to plinthTokenID and refuses any
	// later one, returning how many it revoked. Idempotent.
	RevokePlinthToken(ctx context.Context, plinthTokenID, reason string) (int64, error)
}

// Revoked is one revocation auth published, as a replica applies it.
type Revoked struct {
	// PlinthTokenID is the revoked Plinth token's id; empty for a user.access_revoked, which
	// names only the user.
	PlinthTokenID string
	UserID        string
	// UserWide says the user's access as a whole ended — disabled, deleted, their role
	// changed or an admin revoked their tokens — not one sign-in: the login tokens the user
	// owns end too.
	UserWide bool
	// At is when auth published it.
	At time.Time
}

// userWide are the reasons that end a user's access rather than one sign-in. auth publishes a
// role change as ADMIN (the event's reasons predate roles), as it does an admin's revoke.
var userWide = map[eventsv1.TokenRevocationReason]bool{
	eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_USER_DISABLED: true,
	eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_USER_DELETED:  true,
	eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_ADMIN:         true,
}

// Where auth publishes revocations, as proto/plinth/events/v1/auth.proto declares it.
var (
	authStream               = events.StreamOf(&eventsv1.TokenRevoked{}).Name
	tokenRevokedSubject      = events.SubjectOf(&eventsv1.TokenRevoked{})
	userAccessRevokedSubject = events.SubjectOf(&eventsv1.UserAccessRevoked{})
)

// WatchRevocations writes every Plinth token revocation auth publishes to w, until ctx ends;
// Check reads the database at every call, so a session token is refused on every replica
// once one replica wrote it. Each replica reads the stream with its own ordered consumer, as
// authn.WatchRevocations does (the writes are idempotent), starting catchUp back: a
// revocation published while every replica was down is applied when one comes back, as long
// as catchUp is at least the session tokens' lifetime (a token issued before it has expired
// by then). Until auth's stream exists it retries.
//
// ended is told each revocation first, before the writes: the calls this replica runs on the
// session tokens (and, user-wide, the user's login tokens) end at once, whatever the database
// does; every replica follows the events, so each ends its own.
//
// owned revokes, for a user-wide revocation, the login tokens the user owns (tokens.Issuer).
// auth publishes a user-wide change as one user.access_revoked besides a token.revoked per live
// token; the former alone reaches a user who held no Plinth token (signed out). Each subject
// has its ordered consumer, from the same start: one consumer with two filter subjects needs
// NATS 2.10, and the two are independent (every write is idempotent, in any order).
func WatchRevocations(ctx context.Context, js jetstream.JetStream, w RevocationWriter, owned tokens.UserGrantRevoker, ended func(Revoked), catchUp time.Duration, log *slog.Logger) {
	bo := backoff.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for {
		stop, err := consumeRevocations(ctx, js, w, owned, ended, time.Now().Add(-catchUp), log)
		if err == nil {
			<-ctx.Done()
			stop()
			return
		}
		d := bo.Next()
		log.Warn("cannot follow Plinth token revocations yet; retrying", "stream", authStream, "error", err, "retry_in", d)
		if !backoff.Sleep(ctx, d, nil) {
			return
		}
	}
}

// consumeRevocations starts one ordered consumer per revocation subject, all from since, and
// returns what stops them; on an error it stops those it started.
func consumeRevocations(ctx context.Context, js jetstream.JetStream, w RevocationWriter, owned tokens.UserGrantRevoker, ended func(Revoked), since time.Time, log *slog.Logger) (stop func(), err error) {
	var started []jetstream.ConsumeContext
	stop = func() {
		for _, cc := range started {
			cc.Stop()
		}
	}
	for _, subject := range []string{tokenRevokedSubject, userAccessRevokedSubject} {
		cons, err := js.OrderedConsumer(ctx, authStream, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{subject},
			DeliverPolicy:  jetstream.DeliverByStartTimePolicy,
			OptStartTime:   &since,
		})
		if err != nil {
			stop()
			return nil, err
		}
		cc, err := cons.Consume(handleRevocation(ctx, w, owned, ended, log))
		if err != nil {
			stop()
			return nil, err
		}
		started = append(started, cc)
	}
	return stop, nil
}

// handleRevocation applies one message of either subject; the consumers call it concurrently
// (ended and the writes are safe for that).
func handleRevocation(ctx context.Context, w RevocationWriter, owned tokens.UserGrantRevoker, ended func(Revoked), log *slog.Logger) jetstream.MessageHandler {
	return func(m jetstream.Msg) {
		if events.Republished(m.Headers()) {
			log.Warn("ignoring a revocation that another stream republished: only auth's own count", "subject", m.Subject())
			return
		}
		r, reason, ok := parseRevocation(m, log)
		if !ok {
			return
		}
		if md, err := m.Metadata(); err == nil {
			r.At = md.Timestamp
		}
		ended(r)
		revoke(ctx, w, owned, r, reason, log)
	}
}

// parseRevocation reads a token.revoked or a user.access_revoked; false for a malformed one,
// or a user.access_revoked whose reason leaves the user's own tokens alone (a password change:
// it ends every sign-in, which the token.revoked events carry).
func parseRevocation(m jetstream.Msg, log *slog.Logger) (Revoked, eventsv1.TokenRevocationReason, bool) {
	if m.Subject() == userAccessRevokedSubject {
		var ev eventsv1.UserAccessRevoked
		if err := proto.Unmarshal(m.Data(), &ev); err != nil || ev.GetUserId() == "" {
			log.Warn("ignoring malformed user.access_revoked event", "subject", m.Subject(), "error", err)
			return Revoked{}, 0, false
		}
		if !userWide[ev.GetReason()] {
			return Revoked{}, 0, false
		}
		return Revoked{UserID: ev.GetUserId(), UserWide: true, At: time.Now()}, ev.GetReason(), true
	}
	var ev eventsv1.TokenRevoked
	if err := proto.Unmarshal(m.Data(), &ev); err != nil || ev.GetTokenId() == "" {
		log.Warn("ignoring malformed token.revoked event", "subject", m.Subject(), "error", err)
		return Revoked{}, 0, false
	}
	return Revoked{PlinthTokenID: ev.GetTokenId(), UserID: ev.GetUserId(), UserWide: userWide[ev.GetReason()] && ev.GetUserId() != "", At: time.Now()}, ev.GetReason(), true
}

// revoke writes one revocation, retrying while the database fails: the ordered consumer
// delivers each event once, and a revocation must not be lost.
func revoke(ctx context.Context, w RevocationWriter, owned tokens.UserGrantRevoker, r Revoked, reason eventsv1.TokenRevocationReason, log *slog.Logger) {
	bo := backoff.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for {
		var n, logins int64
		var err error
		if r.PlinthTokenID != "" {
			n, err = w.RevokePlinthToken(ctx, r.PlinthTokenID, reason.String())
		}
		if err == nil && r.UserWide {
			logins, err = owned.RevokeUserGrants(ctx, r.UserID, r.At)
		}
		if err == nil {
			if n > 0 || logins > 0 {
				log.InfoContext(ctx, "revoked Vagrant tokens with their Plinth user's access", "user_id", r.UserID,
					"reason", reason.String(), "session_tokens", n, "login_tokens", logins)
			}
			return
		}
		d := bo.Next()
		log.WarnContext(ctx, "recording a Plinth token revocation failed; retrying", "user_id", r.UserID, "error", err, "retry_in", d)
		if !backoff.Sleep(ctx, d, nil) {
			return
		}
	}
}
