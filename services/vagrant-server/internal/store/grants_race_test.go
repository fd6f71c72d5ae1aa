package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// TestRevokedGrantsTakeWhatTheyMade is the race a revocation leaves open: between auth
// publishing a user's revocation (at) and a replica writing it, the user's tokens still work,
// so an invite converted or a login token made in that gap is newer than at. It must end with
// its maker, however deep the chain, and once the maker is revoked nothing more may be made
// with it; another user's grants and one made after at without a revoked maker stay.
func TestRevokedGrantsTakeWhatTheyMade(t *testing.T) {
	o := &opener{url: testenv.DB(t).URL, close: map[registry.Store]func(){}}
	st := o.open(t)
	ctx := context.Background()
	admitAll := func(int) error { return nil }
	grant := func(id, user, by string, invite bool) tokens.Grant {
		g := tokens.Grant{TokenID: []byte(id), Invite: invite, Role: authz.Operator, Owner: tokens.UserOwner(user), UserID: user}
		if by != "" {
			g.IssuedBy = []byte(by)
		}
		return g
	}
	testenv.OK(t, st.AddGrant(ctx, grant("invite", "u3", "session", true), admitAll))
	testenv.OK(t, st.AddGrant(ctx, grant("other", "u4", "session", false), admitAll))
	at := time.Now()
	time.Sleep(10 * time.Millisecond)
	// In the gap: the invite converted, and a login token made with the converted one.
	testenv.OK(t, st.AddGrant(ctx, grant("converted", "u3", "invite", false), admitAll))
	testenv.OK(t, st.AddGrant(ctx, grant("made", "u3", "converted", false), admitAll))
	testenv.OK(t, st.AddGrant(ctx, grant("fresh", "u3", "new-session", false), admitAll))

	n, err := st.RevokeUserGrants(ctx, "u3", at)
	testenv.OK(t, err)
	if n != 3 {
		t.Fatalf("revoked %d grants, want the invite and the two made from it (3)", n)
	}
	for id, revoked := range map[string]bool{"invite": true, "converted": true, "made": true, "fresh": false, "other": false} {
		if g, err := st.Grant(ctx, []byte(id)); err != nil || g.Revoked != revoked {
			t.Fatalf("grant %s: revoked %v, %v; want %v", id, g.Revoked, err, revoked)
		}
	}
	// After the write, a token that read the invite before it was revoked cannot convert it.
	err = st.AddGrant(ctx, grant("late", "u3", "invite", false), admitAll)
	if !errors.Is(err, tokens.ErrInvalid) {
		t.Fatalf("a grant made by a revoked one: %v, want tokens.ErrInvalid", err)
	}
	if _, err := st.Grant(ctx, []byte("late")); !errors.Is(err, tokens.ErrUnknownGrant) {
		t.Fatalf("the refused grant was recorded: %v", err)
	}
}
