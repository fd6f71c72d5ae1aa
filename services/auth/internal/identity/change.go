package identity

import (
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// The rules of changing a user (role, disabled flag, password, revoking their tokens), each
// as the update Store.UpdateUser takes: a function from the user as stored to the change to
// write, with the events it causes. They decide; the store only writes.

// UserState is what a change of a user is decided on, as the store read it under the
// change's lock: the user, how many enabled admins there are (the user included when they
// are one) and the ids of the user's live tokens (unexpired, unrevoked). Every change of a
// user locks the enabled admins first, so two changes cannot both count an admin the other
// is taking away, and the user's row, so no login adds a token meanwhile.
type UserState struct {
	User          User
	EnabledAdmins int
	LiveTokens    []string
}

// UserChange is what one write of a user saves, in one transaction, and nothing else: the
// user as it is to be stored (its role, disabled flag and password hash; the store keeps the
// other fields and stamps updated_at when one of these changed), the revocation of the tokens
// Revoked (ids of the user's live tokens) for Reason, and Events, written to the outbox in
// order.
type UserChange struct {
	User    User
	Revoked []string
	Reason  RevokeReason
	Events  []proto.Message
}

// revokeAll is the change that stores u and revokes every live token of the user for reason:
// one token.revoked per token, so every cache holding any of them drops it, and one
// user.access_revoked even when the user held no live token, so that credentials other
// services issued to the user (vagrant-server's login tokens) end with it — a user who had
// signed out has no token.revoked to carry it.
func revokeAll(before UserState, u User, reason RevokeReason) UserChange {
	c := UserChange{User: u, Revoked: before.LiveTokens, Reason: reason}
	for _, id := range before.LiveTokens {
		c.Events = append(c.Events, revokedEvent(id, u.ID, reason))
	}
	c.Events = append(c.Events, &eventsv1.UserAccessRevoked{UserId: u.ID, Reason: reason.event()})
	return c
}

// revokedEvent is the token.revoked event of one token.
func revokedEvent(tokenID, userID string, r RevokeReason) *eventsv1.TokenRevoked {
	return &eventsv1.TokenRevoked{TokenId: tokenID, UserId: userID, Reason: r.event()}
}

// ChangeRole is the rule of a role change: the same role changes nothing; another one revokes
// every token of the user, so the new role applies to their next call; the last enabled admin
// keeps the role (ErrLastAdmin), or nobody could administer users but the CLI.
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
		return revokeAll(before, u, RevokeRoleChanged), nil
	}
}

// ChangeDisabled is the rule of disabling or enabling a user. Disabling revokes every live
// token of the user, a repeat disable too: a login that read the user before the first
// disable may have added a token since, and a token must never come back to life with a later
// enable; vagrant-server is told again (user.access_revoked), which it takes as it took the
// first. Enabling revokes nothing and publishes nothing, and a repeat enable changes nothing.
func ChangeDisabled(disabled bool) func(before UserState) (UserChange, error) {
	return func(before UserState) (UserChange, error) {
		u := before.User
		u.Disabled = disabled
		if !disabled {
			return UserChange{User: u}, nil
		}
		return revokeAll(before, u, RevokeUserDisabled), nil
	}
}

// NewPassword is the rule of an admin's password change: the new hash is stored and every
// live token of the user is revoked, so whoever held the old password is signed out.
func NewPassword(hash string) func(before UserState) (UserChange, error) {
	return func(before UserState) (UserChange, error) {
		u := before.User
		u.PasswordHash = hash
		return revokeAll(before, u, RevokePasswordChanged), nil
	}
}

// RevokeAllTokens is the rule of `revoke-tokens`: every live token of the user is revoked
// (RevokeAdmin) and nothing else changes.
func RevokeAllTokens(before UserState) (UserChange, error) {
	return revokeAll(before, before.User, RevokeAdmin), nil
}
