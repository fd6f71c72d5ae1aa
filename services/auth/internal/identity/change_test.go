package identity

import (
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// TestChangeRole is the role-change rule without a store: what a change writes, which tokens
// it revokes, and when the last enabled admin keeps the role.
func TestChangeRole(t *testing.T) {
	user := func(role authz.Role, disabled bool) User {
		return User{ID: "u1", Username: "dan", PasswordHash: "$h", Role: role, Admin: role == authz.Admin, Disabled: disabled}
	}
	cases := []struct {
		name    string
		before  User
		admins  int // enabled admins, the user included
		role    authz.Role
		want    User
		revoke  RevokeReason
		wantErr error
	}{
		{name: "the same role changes nothing", before: user(authz.Operator, false), admins: 1, role: authz.Operator,
			want: user(authz.Operator, false)},
		{name: "the last admin keeping the role changes nothing", before: user(authz.Admin, false), admins: 1, role: authz.Admin,
			want: user(authz.Admin, false)},
		{name: "a new role revokes the tokens", before: user(authz.Operator, false), admins: 1, role: authz.Viewer,
			want: user(authz.Viewer, false), revoke: RevokeRoleChanged},
		{name: "a promotion sets the admin flag", before: user(authz.Viewer, false), admins: 1, role: authz.Admin,
			want: user(authz.Admin, false), revoke: RevokeRoleChanged},
		{name: "the last enabled admin keeps the role", before: user(authz.Admin, false), admins: 1, role: authz.Operator,
			wantErr: ErrLastAdmin},
		{name: "no enabled admin counted is no admin left either", before: user(authz.Admin, false), admins: 0, role: authz.Viewer,
			wantErr: ErrLastAdmin},
		{name: "an admin with another enabled admin left may be demoted", before: user(authz.Admin, false), admins: 2, role: authz.Operator,
			want: user(authz.Operator, false), revoke: RevokeRoleChanged},
		{name: "a disabled admin is not the one left", before: user(authz.Admin, true), admins: 1, role: authz.Viewer,
			want: user(authz.Viewer, true), revoke: RevokeRoleChanged},
		{name: "a disabled admin may be demoted with no enabled admin at all", before: user(authz.Admin, true), admins: 0, role: authz.Operator,
			want: user(authz.Operator, true), revoke: RevokeRoleChanged},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ChangeRole(c.role)(UserState{User: c.before, EnabledAdmins: c.admins, LiveTokens: []string{"t1"}})
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) || err.Error() != c.wantErr.Error() {
					t.Fatalf("err %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.User != c.want || got.Reason != c.revoke {
				t.Fatalf("change %+v revoke %v, want %+v revoke %v", got.User, got.Reason, c.want, c.revoke)
			}
			if c.revoke == 0 && (got.Revoked != nil || got.Events != nil) {
				t.Fatalf("an unchanged role revokes %v and publishes %v", got.Revoked, got.Events)
			}
			if c.revoke != 0 {
				wantRevoked(t, got, "u1", []string{"t1"}, eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_ADMIN)
			}
		})
	}
	if ErrLastAdmin.Error() != "the last enabled admin cannot lose the admin role" {
		t.Fatalf("ErrLastAdmin's message changed: %q (clients see it)", ErrLastAdmin)
	}
}

// wantRevoked requires c to revoke exactly the tokens ids of user userID, with one
// token.revoked each and then one user.access_revoked, all for reason.
func wantRevoked(t *testing.T, c UserChange, userID string, ids []string, reason eventsv1.TokenRevocationReason) {
	t.Helper()
	if !slices.Equal(c.Revoked, ids) {
		t.Fatalf("revokes %v, want %v", c.Revoked, ids)
	}
	var want []proto.Message
	for _, id := range ids {
		want = append(want, &eventsv1.TokenRevoked{TokenId: id, UserId: userID, Reason: reason})
	}
	want = append(want, &eventsv1.UserAccessRevoked{UserId: userID, Reason: reason})
	if !slices.EqualFunc(c.Events, want, proto.Equal) {
		t.Fatalf("events %v, want %v", c.Events, want)
	}
}

// TestUserChanges is the rule of every other change of a user without a store: disabling
// (a repeat too) and a new password revoke every live token with its events, enabling
// revokes and publishes nothing, revoke-tokens changes nothing but the tokens.
func TestUserChanges(t *testing.T) {
	alice := User{ID: "u1", Username: "alice", PasswordHash: "$old", Role: authz.Operator}
	disabled := alice
	disabled.Disabled = true
	rehashed := alice
	rehashed.PasswordHash = "$new"
	const (
		userDisabled = eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_USER_DISABLED
		passwordSet  = eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_PASSWORD_CHANGED
		admin        = eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_ADMIN
	)
	cases := []struct {
		name   string
		rule   func(UserState) (UserChange, error)
		before User
		tokens []string
		want   User
		reason RevokeReason // 0: nothing revoked, nothing published
		event  eventsv1.TokenRevocationReason
	}{
		{name: "disabling revokes every live token", rule: ChangeDisabled(true), before: alice, tokens: []string{"t1", "t2"},
			want: disabled, reason: RevokeUserDisabled, event: userDisabled},
		{name: "disabling a user without tokens still tells the user's other credentials", rule: ChangeDisabled(true), before: alice,
			want: disabled, reason: RevokeUserDisabled, event: userDisabled},
		{name: "a repeat disable revokes what a racing login added", rule: ChangeDisabled(true), before: disabled, tokens: []string{"late"},
			want: disabled, reason: RevokeUserDisabled, event: userDisabled},
		{name: "enabling revokes and publishes nothing", rule: ChangeDisabled(false), before: disabled, tokens: []string{"t1"},
			want: alice},
		{name: "a repeat enable changes nothing", rule: ChangeDisabled(false), before: alice, tokens: []string{"t1"},
			want: alice},
		{name: "a new password revokes every live token", rule: NewPassword("$new"), before: alice, tokens: []string{"t1"},
			want: rehashed, reason: RevokePasswordChanged, event: passwordSet},
		{name: "revoke-tokens revokes and changes nothing else", rule: RevokeAllTokens, before: disabled, tokens: []string{"t1", "t2"},
			want: disabled, reason: RevokeAdmin, event: admin},
		{name: "revoke-tokens without tokens still tells the user's other credentials", rule: RevokeAllTokens, before: alice,
			want: alice, reason: RevokeAdmin, event: admin},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.rule(UserState{User: c.before, EnabledAdmins: 1, LiveTokens: c.tokens})
			if err != nil {
				t.Fatal(err)
			}
			if got.User != c.want || got.Reason != c.reason {
				t.Fatalf("change %+v for %v, want %+v for %v", got.User, got.Reason, c.want, c.reason)
			}
			if c.reason == 0 {
				if got.Revoked != nil || got.Events != nil {
					t.Fatalf("revokes %v and publishes %v, want nothing", got.Revoked, got.Events)
				}
				return
			}
			wantRevoked(t, got, "u1", c.tokens, c.event)
		})
	}
}

// TestSignOut is Logout's rule without a store: a token not yet revoked is revoked with one
// token.revoked (an expired one too: a cache may hold it); a revoked one changes nothing.
func TestSignOut(t *testing.T) {
	live := Token{ID: "t1", UserID: "u1"}
	got, err := SignOut(live)
	want := &eventsv1.TokenRevoked{TokenId: "t1", UserId: "u1", Reason: eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_LOGOUT}
	if err != nil || got.Reason != RevokeLogout || len(got.Events) != 1 || !proto.Equal(got.Events[0], want) {
		t.Fatalf("signing out a live token: %+v %v, want revoked with %v", got, err, want)
	}
	revoked := live
	revoked.Revoked = true
	if got, err := SignOut(revoked); err != nil || got.Reason != 0 || got.Events != nil {
		t.Fatalf("signing out a revoked token: %+v %v, want nothing", got, err)
	}
}
