package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// Token grants on Postgres: recorded and read back, also by a store reopened on the same
// database; an unknown id is tokens.ErrUnknownGrant; a token id is granted once.
func TestTokenGrants(t *testing.T) {
	o := &opener{url: testenv.DB(t).URL, close: map[registry.Store]func(){}}
	st := o.open(t)
	ctx := context.Background()
	first := tokens.Grant{TokenID: []byte("boot"), Role: authz.Admin, Owner: "bootstrap"}
	made := tokens.Grant{TokenID: []byte("made"), Invite: true, Role: authz.Viewer, Owner: "user:u1", UserID: "u1", IssuedBy: []byte("boot")}
	testenv.OK(t, st.AddGrant(ctx, first, nil))
	testenv.OK(t, st.AddGrant(ctx, made, nil))
	again := o.open(t)
	for _, want := range []tokens.Grant{first, made} {
		got, err := again.Grant(ctx, want.TokenID)
		testenv.OK(t, err)
		if got.Role != want.Role || got.Owner != want.Owner || got.UserID != want.UserID || got.Invite != want.Invite ||
			!bytes.Equal(got.IssuedBy, want.IssuedBy) {
			t.Fatalf("read back %+v, want %+v", got, want)
		}
	}
	if _, err := st.Grant(ctx, []byte("nope")); !errors.Is(err, tokens.ErrUnknownGrant) {
		t.Fatalf("unknown id: %v", err)
	}
	if err := st.AddGrant(ctx, tokens.Grant{TokenID: []byte("made"), Role: authz.Admin, Owner: "x"}, nil); err == nil {
		t.Fatal("a token id was granted twice")
	}

	// Revoking a user's grants: theirs made before the revocation, once; nobody else's, and
	// none made after it (an event read again at a replica's start revokes nothing new).
	at := time.Now()
	later := tokens.Grant{TokenID: []byte("later"), Role: authz.Viewer, Owner: "user:u1", UserID: "u1"}
	time.Sleep(10 * time.Millisecond)
	testenv.OK(t, st.AddGrant(ctx, later, nil))
	for i, want := range []int64{1, 0} {
		n, err := st.RevokeUserGrants(ctx, "u1", at)
		testenv.OK(t, err)
		if n != want {
			t.Fatalf("revocation %d revoked %d grants, want %d", i+1, n, want)
		}
	}
	for id, revoked := range map[string]bool{"made": true, "later": false, "boot": false} {
		if g, err := st.Grant(ctx, []byte(id)); err != nil || g.Revoked != revoked {
			t.Fatalf("grant %s: revoked %v, %v; want %v", id, g.Revoked, err, revoked)
		}
	}
}
