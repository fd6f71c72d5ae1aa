package identity

import "github.com/plinth-dev/plinth/libs/platform/authz"

// UserState is what a change of a user is decided on, as the store read it under the
// change's lock: the user and how many enabled admins there are (the user included when
// they are one). Every change of a user locks the enabled admins first, so two changes
// cannot both count an admin the other is taking away.
type UserState struct {
	User          User
	EnabledAdmins int
}

// UserChange is what one write of a user saves: the user as it is to be stored (its role
// and disabled flag; the store keeps the other fields and stamps updated_at when either
// changed) and, when Revoke is set, the revocation of every live token of the user for that
// reason (a token.revoked event each and user.access_revoked), in the same transaction. A
// store writes exactly this and decides nothing.
type UserChange struct {
	User   User
	Revoke RevokeReason // 0: the tokens stay
}

// ChangeRole is the rule of a role change, as the update Store.UpdateUser takes: the same
// role changes nothing; another one revokes every token of the user, so the new role applies
// to their next call; the last enabled admin keeps the role (ErrLastAdmin), or nobody could
// administer users but the CLI.
func ChangeRole(role authz.Role) func(before UserState) (UserChange, error) {
	return func(before UserState) (UserChange, error) {
		u := before.User
		if u.Role == role {
			return UserChange{User: u}, nil
		}
		if u.Role == authz.Admin && !u.Disabled && before.EnabledAdmins <= 1 {
			return UserChange{}, ErrLastAdmin
		}
		u.Role, u.Admin = role, role == authz.Admin
		return UserChange{User: u, Revoke: RevokeRoleChanged}, nil
	}
}
