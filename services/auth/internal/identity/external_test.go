package identity_test

import (
	"errors"
	"testing"
	"time"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// TestExternalSignedIn: the rule of a provider's sign-in, without a database.
func TestExternalSignedIn(t *testing.T) {
	now := time.Now()
	tok := identity.Token{ID: "t-new", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	user := identity.User{ID: "u1", Username: "alice", Role: authz.Viewer}
	ext := identity.ExternalIdentity{Provider: "dex", Subject: "s1", Username: "alice", Role: authz.Viewer}

	// Same role: a token and login.succeeded, nothing revoked.
	c, err := identity.ExternalSignedIn(identity.TokenQuota{}, ext, tok, "10.0.0.1")(identity.ExternalState{User: user, LiveTokens: []string{"t1"}})
	if err != nil || c.Token == nil || c.Token.UserID != "u1" || len(c.Revoked) != 0 || len(c.Events) != 1 {
		t.Fatalf("same role: %+v %v", c, err)
	}
	if ev, ok := c.Events[0].(*eventsv1.LoginSucceeded); !ok || ev.GetTokenId() != "t-new" || ev.GetClientAddress() != "10.0.0.1" {
		t.Fatalf("event %v", c.Events[0])
	}

	// Another role: every live token revoked (one event each, and access_revoked), the quota
	// counted on what is left.
	ext.Role = authz.Admin
	c, _ = identity.ExternalSignedIn(identity.TokenQuota{MaxPerUser: 2}, ext, tok, "")(identity.ExternalState{User: user, LiveTokens: []string{"t1", "t2"}})
	if c.Role != authz.Admin || len(c.Revoked) != 2 || c.Reason != identity.RevokeRoleChanged || c.Token == nil || len(c.Events) != 4 {
		t.Fatalf("role change: %+v", c)
	}

	// A new user is created with the role: nothing to revoke.
	c, _ = identity.ExternalSignedIn(identity.TokenQuota{}, ext, tok, "")(identity.ExternalState{User: identity.User{ID: "u2", Role: authz.Admin}, Created: true})
	if c.Token == nil || len(c.Revoked) != 0 || len(c.Events) != 1 {
		t.Fatalf("created: %+v", c)
	}

	// Disabled: nothing at all.
	dis := user
	dis.Disabled = true
	c, _ = identity.ExternalSignedIn(identity.TokenQuota{}, ext, tok, "")(identity.ExternalState{User: dis, LiveTokens: []string{"t1"}})
	if !errors.Is(c.Refused, identity.ErrAccountDisabled) || c.Token != nil || len(c.Events) != 0 || c.Role != authz.Viewer {
		t.Fatalf("disabled: %+v", c)
	}

	// At the quota: refused, no token.
	ext.Role = authz.Viewer
	c, _ = identity.ExternalSignedIn(identity.TokenQuota{MaxPerUser: 1}, ext, tok, "")(identity.ExternalState{User: user, LiveTokens: []string{"t1"}})
	var q *identity.TokenQuotaError
	if !errors.As(c.Refused, &q) || c.Token != nil {
		t.Fatalf("quota: %+v", c)
	}
}
