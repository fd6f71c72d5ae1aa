package identitytest

import (
	"errors"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// policy throttles a pair after pair failures and an address after addr, for 30 s doubling to
// an hour, forgetting after a day.
func policy(pair, addr int) identity.LockoutPolicy {
	return identity.LockoutPolicy{PairThreshold: pair, AddrThreshold: addr, BaseDelay: 30 * time.Second, MaxDelay: time.Hour, Forget: 24 * time.Hour}
}

// attempt begins one attempt of username from addr at at; it fails the test on any error but
// a *identity.LockedError, whose retry delay it returns (0: counted, not throttled).
func attempt(st *StoreTest, p identity.LockoutPolicy, username, addr string, at time.Time) time.Duration {
	st.T.Helper()
	err := begin(st, identity.Attempt{Username: username, ClientAddress: addr, At: at}, p)
	var locked *identity.LockedError
	if errors.As(err, &locked) {
		if locked.RetryAfter <= 0 {
			st.T.Fatalf("throttled with retry after %v", locked.RetryAfter)
		}
		return locked.RetryAfter
	}
	testenv.OK(st.T, err)
	return 0
}

// admitted requires the attempt to be counted, throttled requires it refused after want.
func admitted(st *StoreTest, p identity.LockoutPolicy, username, addr string, at time.Time) {
	st.T.Helper()
	if d := attempt(st, p, username, addr, at); d != 0 {
		st.T.Fatalf("%s from %q: throttled for %v, want counted", username, addr, d)
	}
}

func throttled(st *StoreTest, p identity.LockoutPolicy, username, addr string, at time.Time, want time.Duration) {
	st.T.Helper()
	if d := attempt(st, p, username, addr, at); d != want {
		st.T.Fatalf("%s from %q: retry after %v, want %v", username, addr, d, want)
	}
}

func throttleBehaviours() []behaviour {
	return []behaviour{
		{Name: "throttle/a pair is throttled after its threshold and a throttled attempt counts nothing", Run: func(st *StoreTest) {
			p, t0 := policy(2, 100), now()
			admitted(st, p, "alice", "192.0.2.1", t0)
			admitted(st, p, "Alice", "192.0.2.1", t0) // usernames are one case-insensitively
			st.Restart()
			throttled(st, p, "alice", "192.0.2.1", t0.Add(10*time.Second), 20*time.Second)
			throttled(st, p, "alice", "192.0.2.1", t0.Add(20*time.Second), 10*time.Second)
			admitted(st, p, "alice", "192.0.2.2", t0.Add(20*time.Second)) // the user from elsewhere
			admitted(st, p, "bob", "192.0.2.1", t0.Add(20*time.Second))   // another user from there
			admitted(st, p, "alice", "192.0.2.1", t0.Add(30*time.Second)) // the interval is over
			st.Restart()
			// Three failures: the interval doubles once. Had the two throttled attempts counted, it
			// would have doubled three times.
			throttled(st, p, "alice", "192.0.2.1", t0.Add(30*time.Second), time.Minute)
		}},
		{Name: "throttle/an address is throttled for every username after its threshold", Run: func(st *StoreTest) {
			p, at := policy(100, 3), now()
			for _, u := range []string{"u1", "u2", "u3"} {
				admitted(st, p, u, "198.51.100.7", at)
			}
			st.Restart()
			throttled(st, p, "u4", "198.51.100.7", at, 30*time.Second)
			admitted(st, p, "u4", "198.51.100.8", at)
		}},
		{Name: "throttle/without an address each username is one pair", Run: func(st *StoreTest) {
			p, t0 := policy(2, 2), now()
			admitted(st, p, "alice", "", t0)
			admitted(st, p, "alice", "", t0)
			st.Restart()
			throttled(st, p, "alice", "", t0, 30*time.Second)
			admitted(st, p, "bob", "", t0) // no address counter to share
			admitted(st, p, "carol", "", t0)
		}},
		{Name: "throttle/a success resets its pair and takes back only its own attempt from the address", Run: func(st *StoreTest) {
			p, t0 := policy(2, 3), now()
			u := user(st, "alice", authz.Operator)
			const addr = "203.0.113.5"
			admitted(st, p, "bob", addr, t0)   // address 1
			admitted(st, p, "alice", addr, t0) // address 2, pair 1
			admitted(st, p, "alice", addr, t0) // address 3, pair 2
			tok := identity.Token{ID: identity.TokenID("t1"), UserID: u.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
			testenv.OK(st.T, createToken(st, tok, identity.Attempt{Username: "alice", ClientAddress: addr, At: t0}, nil)) // address 2, pair 0
			st.Restart()
			admitted(st, p, "alice", addr, t0) // address 3, pair 1
			throttled(st, p, "carol", addr, t0, 30*time.Second)
			testenv.OK(st.T, createToken(st, identity.Token{ID: identity.TokenID("t2"), UserID: u.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
				identity.Attempt{Username: "alice", ClientAddress: addr, At: t0}, nil)) // address 2, pair 0
			admitted(st, p, "carol", addr, t0)
		}},
		{Name: "throttle/counters are forgotten a Forget after the last failure", Run: func(st *StoreTest) {
			p, t0 := policy(2, 100), now()
			admitted(st, p, "alice", "192.0.2.1", t0)
			admitted(st, p, "alice", "192.0.2.1", t0)
			st.Restart()
			throttled(st, p, "alice", "192.0.2.1", t0.Add(time.Second), 29*time.Second)
			later := t0.Add(p.Forget)
			admitted(st, p, "alice", "192.0.2.1", later) // counts from one again
			admitted(st, p, "alice", "192.0.2.1", later)
			throttled(st, p, "alice", "192.0.2.1", later, 30*time.Second)
		}},
		{Name: "throttle/unlocking a username clears its pairs from every address, not the addresses", Run: func(st *StoreTest) {
			p, t0 := policy(2, 5), now()
			for _, addr := range []string{"192.0.2.1", "192.0.2.2"} {
				admitted(st, p, "alice", addr, t0)
				admitted(st, p, "alice", addr, t0)
			}
			admitted(st, p, "alice-two", "192.0.2.1", t0) // shares a prefix, not the name
			admitted(st, p, "alice-two", "192.0.2.1", t0)
			st.Restart()
			if n := testenv.Must(st.Store.ClearUserThrottles(st.Ctx, "ALICE"))(st.T); n != 2 {
				st.T.Fatalf("cleared %d counters, want alice's 2 pairs", n)
			}
			admitted(st, p, "alice", "192.0.2.2", t0)
			throttled(st, p, "alice-two", "192.0.2.1", t0, 30*time.Second)
			// 192.0.2.1 kept its 4 failures: one more reaches 5.
			admitted(st, p, "alice", "192.0.2.1", t0)
			throttled(st, p, "bob", "192.0.2.1", t0, 30*time.Second)
			if n := testenv.Must(st.Store.ClearUserThrottles(st.Ctx, "nobody"))(st.T); n != 0 {
				st.T.Fatalf("cleared %d counters of a name without any", n)
			}
		}},
		{Name: "throttle/unlocking an address clears it and its pairs only", Run: func(st *StoreTest) {
			p, t0 := policy(2, 3), now()
			admitted(st, p, "alice", "192.0.2.1", t0)
			admitted(st, p, "alice", "192.0.2.1", t0)
			admitted(st, p, "bob", "192.0.2.1", t0)
			admitted(st, p, "alice", "192.0.2.10", t0)
			admitted(st, p, "alice", "192.0.2.10", t0)
			st.Restart()
			if n := testenv.Must(st.Store.ClearAddressThrottles(st.Ctx, "192.0.2.1"))(st.T); n != 3 {
				st.T.Fatalf("cleared %d counters, want the address and its 2 pairs", n)
			}
			admitted(st, p, "alice", "192.0.2.1", t0)
			throttled(st, p, "alice", "192.0.2.10", t0, 30*time.Second) // a different address
		}},
	}
}
