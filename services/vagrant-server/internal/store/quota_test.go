package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/sessions"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// seen is an admit function that records every count it is asked about and refuses from
// limit on with errFull.
type seen struct {
	mu     sync.Mutex
	limit  int
	counts []int
}

var errFull = errors.New("full")

func (s *seen) admit(live int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts = append(s.counts, live)
	if live >= s.limit {
		return errFull
	}
	return nil
}

// The live tokens of an owner, as the token quota counts them on Postgres: a Plinth user's
// session tokens and grants together; not revoked ones, expired session tokens or invites,
// nor other owners'; a refused token is not recorded; tokens racing for the last places
// never take more than there are.
func TestTokenQuotaCounts(t *testing.T) {
	o := &opener{url: testenv.DB(t).URL, close: map[registry.Store]func(){}}
	st := o.open(t)
	ctx := context.Background()
	hour := time.Now().Add(time.Hour)
	session := func(id, plinth, user string, expires time.Time) sessions.Token {
		return sessions.Token{ID: []byte(id), PlinthTokenID: plinth, UserID: user, Username: user, Role: authz.Viewer, ExpiresAt: expires}
	}
	grant := func(id, user string, invite bool, expires time.Time) tokens.Grant {
		return tokens.Grant{TokenID: []byte(id), Invite: invite, Role: authz.Viewer, Owner: tokens.UserOwner(user), UserID: user, ExpiresAt: expires}
	}
	for _, s := range []sessions.Token{
		session("s-live", "p1", "u1", hour), session("s-expired", "p1", "u1", time.Now().Add(-time.Minute)),
		session("s-revoked", "p2", "u1", hour), session("s-other", "p3", "u2", hour),
	} {
		testenv.OK(t, st.AddSessionToken(ctx, s, nil))
	}
	testenv.Must(st.RevokePlinthToken(ctx, "p2", "logout"))(t)
	for _, g := range []tokens.Grant{
		grant("g-login", "u1", false, time.Time{}), grant("g-invite", "u1", true, hour),
		grant("g-invite-expired", "u1", true, time.Now().Add(-time.Minute)), grant("g-other", "u2", false, time.Time{}),
		{TokenID: []byte("g-old-invite"), Invite: true, Role: authz.Viewer, Owner: tokens.UserOwner("u1"), UserID: "u1"},
	} {
		testenv.OK(t, st.AddGrant(ctx, g, nil))
	}
	// u1 holds three: s-live, g-login, g-invite — whichever kind the new token is.
	s := &seen{limit: 3}
	if err := st.AddSessionToken(ctx, session("s-new", "p1", "u1", hour), s.admit); !errors.Is(err, errFull) {
		t.Fatalf("a 4th session token: %v, want the refusal", err)
	}
	if err := st.AddGrant(ctx, grant("g-new", "u1", false, time.Time{}), s.admit); !errors.Is(err, errFull) {
		t.Fatalf("a 4th grant: %v, want the refusal", err)
	}
	if fmt.Sprint(s.counts) != "[3 3]" {
		t.Fatalf("admit saw %v, want u1's 3 live tokens twice", s.counts)
	}
	if _, err := st.SessionToken(ctx, []byte("s-new")); !errors.Is(err, sessions.ErrUnknown) {
		t.Fatalf("the refused session token was recorded: %v", err)
	}
	if _, err := st.Grant(ctx, []byte("g-new")); !errors.Is(err, tokens.ErrUnknownGrant) {
		t.Fatalf("the refused grant was recorded: %v", err)
	}
	// The grants of an owner that is no user (a token's) count alone.
	s = &seen{limit: 1}
	testenv.OK(t, st.AddGrant(ctx, tokens.Grant{TokenID: []byte("t-1"), Role: authz.Operator, Owner: "token:abcd"}, s.admit))
	if err := st.AddGrant(ctx, tokens.Grant{TokenID: []byte("t-2"), Role: authz.Operator, Owner: "token:abcd"}, s.admit); !errors.Is(err, errFull) {
		t.Fatalf("a token owner's 2nd grant: %v, want the refusal", err)
	}

	// Twelve tokens of u3 at once, half session tokens on two replicas' stores, half grants:
	// five places, five recorded.
	other := o.open(t)
	s = &seen{limit: 5}
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := range 12 {
		wg.Go(func() {
			id := fmt.Sprint("race-", i)
			if i%2 == 0 {
				errs <- other.AddSessionToken(ctx, session(id, "p9", "u3", hour), s.admit)
				return
			}
			errs <- st.AddGrant(ctx, grant(id, "u3", false, time.Time{}), s.admit)
		})
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, errFull):
			t.Fatalf("a racing token: %v", err)
		}
	}
	if ok != 5 {
		t.Fatalf("%d racing tokens recorded; 5 places were free (counts seen: %v)", ok, s.counts)
	}
}
