package sessions_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/sessions"
)

// revocationLog records what WatchRevocations wrote and ended.
type revocationLog struct {
	mu     sync.Mutex
	tokens []string // RevokePlinthToken's ids
	users  []string // RevokeUserGrants's users
	ended  []sessions.Revoked
}

func (l *revocationLog) RevokePlinthToken(_ context.Context, id, _ string) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens = append(l.tokens, id)
	return 1, nil
}

func (l *revocationLog) RevokeUserGrants(_ context.Context, userID string, _ time.Time) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.users = append(l.users, userID)
	return 1, nil
}

func (l *revocationLog) end(r sessions.Revoked) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = append(l.ended, r)
}

func (l *revocationLog) revokedUser(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range l.users {
		if u == id {
			return true
		}
	}
	return false
}

// TestUserAccessRevokedEndsTheUsersGrants drives WatchRevocations with auth's two subjects on
// a NATS of its own: a user.access_revoked published before the replica started (within the
// catch-up) and one after end the user's calls and revoke their grants, as a user-wide
// token.revoked does; one for a password change (sign-ins only), a malformed one and a copy
// another stream republished change nothing.
func TestUserAccessRevokedEndsTheUsersGrants(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	nc, err := nats.Connect(testenv.NATSServer(t, 0, t.TempDir()).ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st := events.StreamOf(&eventsv1.UserAccessRevoked{})
	if _, err := events.EnsureStream(ctx, js, st.Name, st.Subjects, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	publish := func(m proto.Message, republished bool) {
		t.Helper()
		msg := nats.NewMsg(events.SubjectOf(m))
		msg.Data, _ = proto.Marshal(m)
		if republished {
			msg.Header.Set(jetstream.StreamHeader, "ELSEWHERE")
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	const disabled, adminReason, password = eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_USER_DISABLED,
		eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_ADMIN, eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_PASSWORD_CHANGED
	publish(&eventsv1.UserAccessRevoked{UserId: "u-before", Reason: disabled}, false)

	l := &revocationLog{}
	watchCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sessions.WatchRevocations(watchCtx, js, l, l, l.end, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() { stop(); <-done })

	publish(&eventsv1.UserAccessRevoked{UserId: "u-copy", Reason: disabled}, true)
	publish(&eventsv1.UserAccessRevoked{UserId: "u-password", Reason: password}, false)
	publish(&eventsv1.UserAccessRevoked{Reason: disabled}, false)
	publish(&eventsv1.TokenRevoked{TokenId: "t-1", UserId: "u-token", Reason: adminReason}, false)
	publish(&eventsv1.UserAccessRevoked{UserId: "u-after", Reason: adminReason}, false) // the last on its subject

	for deadline := time.Now().Add(10 * time.Second); !l.revokedUser("u-after") || !l.revokedUser("u-token"); {
		if time.Now().After(deadline) {
			t.Fatalf("revoked users %v after 10s, want u-before, u-token and u-after", l.users)
		}
		time.Sleep(10 * time.Millisecond)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	want := map[string]bool{"u-before": true, "u-token": true, "u-after": true}
	if len(l.users) != len(want) {
		t.Fatalf("revoked the grants of %v, want only %v", l.users, want)
	}
	for _, u := range l.users {
		if !want[u] {
			t.Fatalf("revoked the grants of %s (%v)", u, l.users)
		}
	}
	if len(l.tokens) != 1 || l.tokens[0] != "t-1" {
		t.Fatalf("revoked Plinth tokens %v, want [t-1]: a user event names no token", l.tokens)
	}
	for _, r := range l.ended {
		if !r.UserWide || !want[r.UserID] || (r.PlinthTokenID != "") != (r.UserID == "u-token") {
			t.Fatalf("ended %+v", r)
		}
	}
	if len(l.ended) != len(want) {
		t.Fatalf("ended %d revocations, want %d: %+v", len(l.ended), len(want), l.ended)
	}
}
