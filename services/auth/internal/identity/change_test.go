package identity

import (
	"errors"
	"testing"

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
			got, err := ChangeRole(c.role)(UserState{User: c.before, EnabledAdmins: c.admins})
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) || err.Error() != c.wantErr.Error() {
					t.Fatalf("err %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.User != c.want || got.Revoke != c.revoke {
				t.Fatalf("change %+v revoke %v, want %+v revoke %v", got.User, got.Revoke, c.want, c.revoke)
			}
		})
	}
	if ErrLastAdmin.Error() != "the last enabled admin cannot lose the admin role" {
		t.Fatalf("ErrLastAdmin's message changed: %q (clients see it)", ErrLastAdmin)
	}
}
