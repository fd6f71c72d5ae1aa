package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/sessions"
)

// Session tokens on Postgres: recorded and read back; revoked with their Plinth token (an
// idempotent revocation); refused when the Plinth token was revoked first (the event arrived
// before the issue committed); forgotten once expired.
func TestSessionTokens(t *testing.T) {
	o := &opener{url: testenv.DB(t).URL, close: map[registry.Store]func(){}}
	st := o.open(t)
	ctx := context.Background()
	exp := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	tok := sessions.Token{ID: []byte("id-1"), PlinthTokenID: "p1", UserID: "u1", Username: "otto", Role: authz.Viewer, ExpiresAt: exp}
	testenv.OK(t, st.AddSessionToken(ctx, tok, nil))
	got, err := st.SessionToken(ctx, tok.ID)
	testenv.OK(t, err)
	if got.PlinthTokenID != "p1" || got.Role != authz.Viewer || !got.ExpiresAt.Equal(exp) || !got.RevokedAt.IsZero() || got.Username != "otto" {
		t.Fatalf("read back %+v", got)
	}
	if _, err := st.SessionToken(ctx, []byte("nope")); !errors.Is(err, sessions.ErrUnknown) {
		t.Fatalf("unknown id: %v", err)
	}

	for i, want := range []int64{1, 0} { // the second revocation changes nothing
		n, err := st.RevokePlinthToken(ctx, "p1", "TOKEN_REVOCATION_REASON_LOGOUT")
		testenv.OK(t, err)
		if n != want {
			t.Fatalf("revocation %d revoked %d tokens, want %d", i+1, n, want)
		}
	}
	if got, _ := st.SessionToken(ctx, tok.ID); got.RevokedAt.IsZero() {
		t.Fatal("the session token outlived its Plinth token's revocation")
	}
	late := tok
	late.ID = []byte("id-2")
	if err := st.AddSessionToken(ctx, late, nil); !errors.Is(err, sessions.ErrSessionEnded) {
		t.Fatalf("issue after the revocation: %v, want ErrSessionEnded", err)
	}

	old := sessions.Token{ID: []byte("id-3"), PlinthTokenID: "p2", UserID: "u1", Username: "otto", Role: authz.Admin, ExpiresAt: time.Now().Add(-2 * time.Hour)}
	testenv.OK(t, st.AddSessionToken(ctx, old, nil))
	n, err := st.PurgeSessionTokens(ctx, time.Now().Add(-time.Hour))
	testenv.OK(t, err)
	if n != 1 {
		t.Fatalf("purged %d rows, want the one expired token", n)
	}
	if _, err := st.SessionToken(ctx, old.ID); !errors.Is(err, sessions.ErrUnknown) {
		t.Fatalf("an expired token was kept: %v", err)
	}
}
