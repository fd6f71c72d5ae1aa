package store_test

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// TestUserAccessRevokedEvenWithoutTokens: every change that revokes all of a user's tokens
// writes one user.access_revoked in its transaction — also for a user who holds no token, whose
// change writes no token.revoked, so that credentials other services issued to the user end
// with it. Re-enabling, an unchanged role, a password set without revoking and a refused change
// write none.
func TestUserAccessRevokedEvenWithoutTokens(t *testing.T) {
	t.Parallel()
	st, ctx := open(t)
	if _, err := st.CreateUser(ctx, "root", "$h", authz.Admin); err != nil {
		t.Fatal(err)
	}
	erin, _ := st.CreateUser(ctx, "erin", "$h", authz.Operator)
	subject := events.SubjectOf(&eventsv1.UserAccessRevoked{})
	var want []eventsv1.TokenRevocationReason
	check := func(step string) {
		t.Helper()
		payloads, err := st.OutboxPayloads(ctx, subject)
		if err != nil {
			t.Fatal(err)
		}
		if len(payloads) != len(want) {
			t.Fatalf("after %s: %d user.access_revoked events, want %d", step, len(payloads), len(want))
		}
		for i, p := range payloads {
			var ev eventsv1.UserAccessRevoked
			if err := proto.Unmarshal(p, &ev); err != nil || ev.GetUserId() != erin.ID || ev.GetReason() != want[i] {
				t.Fatalf("after %s: event %d = %v (%v), want user %s reason %v", step, i, &ev, err, erin.ID, want[i])
			}
		}
	}
	if n := outboxCount(t, ctx, st, events.SubjectOf(&eventsv1.TokenRevoked{})); n != 0 {
		t.Fatalf("%d token.revoked before any change", n)
	}

	if _, err := st.UpdateUser(ctx, "erin", identity.ChangeDisabled(true)); err != nil {
		t.Fatal(err)
	}
	want = append(want, eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_USER_DISABLED)
	check("disable")
	if _, err := st.UpdateUser(ctx, "erin", identity.ChangeDisabled(false)); err != nil {
		t.Fatal(err)
	}
	check("enable")

	if _, err := st.UpdateUser(ctx, "erin", identity.ChangeRole(authz.Operator)); err != nil {
		t.Fatal(err)
	}
	check("the same role")
	if _, err := st.UpdateUser(ctx, "erin", identity.ChangeRole(authz.Viewer)); err != nil {
		t.Fatal(err)
	}
	want = append(want, eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_ADMIN)
	check("role change")

	now := time.Now()
	a := identity.Attempt{Username: "erin", At: now}
	if err := issue(ctx, st, identity.Token{ID: "e0", UserID: erin.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, a, "$rehashed"); err != nil {
		t.Fatal(err)
	}
	check("a login's rehash")
	if _, err := st.UpdateUser(ctx, "erin", identity.NewPassword("$h3")); err != nil {
		t.Fatal(err)
	}
	want = append(want, eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_PASSWORD_CHANGED)
	check("password reset")

	// With live tokens: one user event for the change, beside one token.revoked per token.
	for _, id := range []string{"e1", "e2"} {
		if err := issue(ctx, st, identity.Token{ID: id, UserID: erin.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, identity.Attempt{Username: "erin", At: now}, ""); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if _, err := st.UpdateUser(ctx, "erin", func(before identity.UserState) (identity.UserChange, error) {
		c, err := identity.RevokeAllTokens(before)
		n = len(c.Revoked)
		return c, err
	}); err != nil || n != 2 {
		t.Fatalf("revoke-all: %d %v", n, err)
	}
	want = append(want, eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_ADMIN)
	check("revoke-all")
	if n := outboxCount(t, ctx, st, events.SubjectOf(&eventsv1.TokenRevoked{})); n != 3 {
		t.Fatalf("%d token.revoked, want one per live token (2) and the one of the password change (e0)", n)
	}

	// A refused change writes nothing: the event is the transaction's.
	if _, err := st.UpdateUser(ctx, "root", identity.ChangeRole(authz.Viewer)); !errors.Is(err, identity.ErrLastAdmin) {
		t.Fatalf("demoting the last admin: %v", err)
	}
	if payloads, _ := st.OutboxPayloads(ctx, subject); len(payloads) != len(want) {
		t.Fatalf("a refused role change wrote user.access_revoked (%d events)", len(payloads))
	}
}
