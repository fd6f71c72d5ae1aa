package tokens

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// ErrUnknownGrant is a GrantStore's answer for a token id it never recorded.
var ErrUnknownGrant = errors.New("unknown token grant")

// ErrRoleTooHigh refuses a token asked for with a role above its maker's: PermissionDenied.
var ErrRoleTooHigh = errors.New("a token cannot be given a role above the role of the token that makes it")

// RoleHeader is the metadata with which GenerateLoginToken and GenerateInviteToken are asked
// for a role ("viewer", "operator", "admin"): upstream's requests have no field for it (and
// must not change), and without it the new token has its maker's role.
const RoleHeader = "plinth-vagrant-token-role"

// Grant is what the server records of a login or invite token it signs without an expiry of
// a session: the token's role and owner, which the token itself (upstream's format) cannot
// carry. Only ids are stored, never a token.
type Grant struct {
	// TokenID is the token's random token_id.
	TokenID []byte
	// Invite is true for an invite, false for a login token.
	Invite bool
	// Role is what the token may call (authz.Check on /hashicorp.vagrant.Vagrant/<method>).
	Role authz.Role
	// Owner names whom the token belongs to (Caller.Owner).
	Owner string
	// UserID is the Plinth user owning it, when a Plinth user's token made it.
	UserID string
	// IssuedBy is the token_id of the token it was made with; empty for the first.
	IssuedBy []byte
	// Revoked is set once the owning user's access ended (RevokeUserGrants).
	Revoked bool
	// ExpiresAt is when an invite expires; zero for a login token, which never does.
	ExpiresAt time.Time
}

// GrantStore keeps the grants.
type GrantStore interface {
	// AddGrant records g; recording the same token id twice is an error. First, holding a
	// lock of g.Owner that every new token of the owner takes (session tokens too, on any
	// replica), it counts the owner's live tokens — unrevoked grants that have not expired
	// (invites made before expiries were recorded not counted) and, for a Plinth user's,
	// their live session tokens — and asks admit (nil: admit all); when admit refuses, it
	// records nothing and returns admit's error.
	AddGrant(ctx context.Context, g Grant, admit func(live int) error) error
	// Grant returns token id's grant, or ErrUnknownGrant.
	Grant(ctx context.Context, id []byte) (Grant, error)
	UserGrantRevoker
}

// UserGrantRevoker revokes the grants a Plinth user owns.
type UserGrantRevoker interface {
	// RevokeUserGrants revokes every grant userID owns that was made before at, returning
	// how many; idempotent (an event read again revokes nothing made since).
	RevokeUserGrants(ctx context.Context, userID string, at time.Time) (int64, error)
}

// NotAllowedError is a token's role refusing a Vagrant method (authz's message):
// PermissionDenied.
type NotAllowedError struct{ err error }

func (e *NotAllowedError) Error() string { return e.err.Error() }

// vagrantService prefixes a Vagrant method's short name for authz.
const vagrantService = "/hashicorp.vagrant.Vagrant/"

// Allow is nil when role may call the Vagrant method (its short name, "QueueJob"), else a
// *NotAllowedError: every Vagrant token — session, login, converted invite — is checked
// against the same authz table the rest of the suite uses.
func Allow(role authz.Role, method string) error {
	if err := authz.Check(role, vagrantService+method); err != nil {
		return &NotAllowedError{err: err}
	}
	return nil
}

// covers reports whether a token of role by may make one of role r: r allows nothing by does
// not.
func covers(by, r authz.Role) bool {
	for _, k := range []authz.Kind{authz.Read, authz.Write, authz.Session, authz.UserAdmin} {
		if r.Allows(k) && !by.Allows(k) {
			return false
		}
	}
	return true
}

// grantFor is the grant of a new token made by caller by, with role (empty: by's own).
func grantFor(by Caller, id []byte, invite bool, role authz.Role) (Grant, error) {
	if role == "" {
		role = by.Role
	}
	if !covers(by.Role, role) {
		return Grant{}, fmt.Errorf("%w (role %s asked by a token of role %s)", ErrRoleTooHigh, role, by.Role)
	}
	owner := "token:" + hex.EncodeToString(by.TokenID)
	if by.UserID != "" {
		owner = UserOwner(by.UserID)
	}
	return Grant{TokenID: id, Invite: invite, Role: role, Owner: owner, UserID: by.UserID, IssuedBy: by.TokenID}, nil
}

// caller is whom a login token with grant g speaks for.
func (g Grant) caller() Caller {
	return Caller{TokenID: g.TokenID, Role: g.Role, Owner: g.Owner, UserID: g.UserID}
}
