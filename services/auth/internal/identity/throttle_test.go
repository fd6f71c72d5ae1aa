package identity_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// TestWrongPasswordsFromOneAddressDoNotLockTheUserElsewhere is the attack on the old policy (a
// username lock every client shared): a storm of wrong passwords for a user from one address
// throttles that pair, and then the address, but the user still signs in from another address
// and a session they already hold stays valid.
func TestWrongPasswordsFromOneAddressDoNotLockTheUserElsewhere(t *testing.T) {
	t.Parallel()
	st, ctx := open(t)
	clock := time.Now().Truncate(time.Millisecond) // as Postgres keeps it
	svc := newService(t, st, cheap(), func() time.Time { return clock })
	if _, err := svc.AddUser(ctx, "root-admin", "root-password", authz.Admin); err != nil {
		t.Fatal(err)
	}
	session, _, err := svc.Login(ctx, "root-admin", "root-password", "192.0.2.10")
	if err != nil {
		t.Fatal(err)
	}
	p := identity.DefaultLockoutPolicy()
	const attacker, user = "198.51.100.66", "192.0.2.10"
	for i := range p.PairThreshold {
		if _, _, err := svc.Login(ctx, "root-admin", "wrong-password", attacker); !errors.Is(err, identity.ErrBadLogin) {
			t.Fatalf("wrong password %d: %v", i, err)
		}
	}
	var locked *identity.LockedError
	if _, _, err := svc.Login(ctx, "root-admin", "root-password", attacker); !errors.As(err, &locked) {
		t.Fatalf("the attacker's (username, address) pair must be throttled, even for the right password: %v", err)
	}
	if _, _, err := svc.Login(ctx, "root-admin", "root-password", user); err != nil {
		t.Fatalf("wrong passwords from %s locked the user out at %s: %v", attacker, user, err)
	}
	if _, ok, err := svc.CheckToken(ctx, session); err != nil || !ok {
		t.Fatalf("the signed-in session must be unaffected: %v %v", ok, err)
	}

	// Spraying other usernames from the same address throttles the address itself, for any
	// username, right password or not; the user's own address is still free.
	for i := p.PairThreshold; i < p.AddrThreshold; i++ {
		if _, _, err := svc.Login(ctx, fmt.Sprintf("guess-%d", i), "wrong-password", attacker); !errors.Is(err, identity.ErrBadLogin) {
			t.Fatalf("spray %d: %v", i, err)
		}
	}
	if _, err := svc.AddUser(ctx, "other", "other-password", authz.Operator); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Login(ctx, "other", "other-password", attacker); !errors.As(err, &locked) || locked.RetryAfter <= 0 {
		t.Fatalf("after %d failures the address must be throttled: %v", p.AddrThreshold, err)
	}
	if _, _, err := svc.Login(ctx, "other", "other-password", user); err != nil {
		t.Fatalf("another address: %v", err)
	}

	// The throttle grows: one more failure after the base delay doubles it.
	clock = clock.Add(p.BaseDelay + time.Second)
	if _, _, err := svc.Login(ctx, "root-admin", "wrong-password", attacker); !errors.Is(err, identity.ErrBadLogin) {
		t.Fatalf("after the first interval: %v", err)
	}
	if _, _, err := svc.Login(ctx, "root-admin", "wrong-password", attacker); !errors.As(err, &locked) || locked.RetryAfter != 2*p.BaseDelay {
		t.Fatalf("the second interval must be twice the first: %v", err)
	}
}

// TestOperatorUnlocksUserAndAddress: UnlockUser clears every pair of the username (not the
// address), UnlockAddress the address and its pairs; a malformed address names the field.
func TestOperatorUnlocksUserAndAddress(t *testing.T) {
	t.Parallel()
	st, ctx := open(t)
	svc := newService(t, st, cheap(), nil)
	if _, err := svc.AddUser(ctx, "grace", "grace-password", authz.Operator); err != nil {
		t.Fatal(err)
	}
	p := identity.DefaultLockoutPolicy()
	const addr = "203.0.113.5"
	for range p.PairThreshold {
		_, _, _ = svc.Login(ctx, "Grace", "wrong-password", addr)
	}
	var locked *identity.LockedError
	if _, _, err := svc.Login(ctx, "grace", "grace-password", addr); !errors.As(err, &locked) {
		t.Fatalf("want the pair throttled: %v", err)
	}
	if n, err := svc.UnlockUser(ctx, "GRACE"); err != nil || n != 1 {
		t.Fatalf("unlock user: %d %v", n, err)
	}
	if _, _, err := svc.Login(ctx, "grace", "grace-password", addr); err != nil {
		t.Fatalf("after unlock: %v", err)
	}

	for i := range p.AddrThreshold {
		_, _, _ = svc.Login(ctx, fmt.Sprintf("nobody-%d", i), "wrong-password", addr)
	}
	if _, _, err := svc.Login(ctx, "grace", "grace-password", addr); !errors.As(err, &locked) {
		t.Fatalf("want the address throttled: %v", err)
	}
	if n, _ := svc.UnlockUser(ctx, "grace"); n != 0 {
		t.Fatalf("unlocking the user cleared %d counters; the address's are not the user's", n)
	}
	if _, _, err := svc.Login(ctx, "grace", "grace-password", addr); !errors.As(err, &locked) {
		t.Fatalf("unlocking the user must not free the address: %v", err)
	}
	if n, err := svc.UnlockAddress(ctx, "::ffff:"+addr); err != nil || n < 1 {
		t.Fatalf("unlock address: %d %v", n, err)
	}
	if _, _, err := svc.Login(ctx, "grace", "grace-password", addr); err != nil {
		t.Fatalf("after unlocking the address: %v", err)
	}
	if _, err := svc.UnlockAddress(ctx, "not-an-ip"); err == nil || err.Error() != "address: must be an IP address such as 192.0.2.7 or 2001:db8::7" {
		t.Fatalf("bad address: %v", err)
	}
	if _, err := svc.UnlockUser(ctx, "a b"); err == nil {
		t.Fatal("bad username accepted")
	}
}

// TestHashGateRefusesBeyondCapacityBeforeHashing: with the hasher blocked, logins beyond the
// slots and queue are refused at once with *BusyError (retry-after set) and hash nothing; one
// address cannot take more than its share; the place kept for addresses with a recent success
// still admits one; the admitted ones finish once the hasher runs.
func TestHashGateRefusesBeyondCapacityBeforeHashing(t *testing.T) {
	t.Parallel()
	st, ctx := open(t)
	svc, err := identity.NewService(st, identity.Options{Hash: cheap(), Lockout: identity.DefaultLockoutPolicy(),
		TokenTTL: time.Hour, HashConcurrency: 1, HashQueue: 2}) // 3 places, 1 kept for known addresses
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddUser(ctx, "heidi", "heidi-password", authz.Operator); err != nil {
		t.Fatal(err)
	}
	const known = "192.0.2.9"
	if _, _, err := svc.Login(ctx, "heidi", "heidi-password", known); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var hashed atomic.Int32
	identity.SetVerify(svc, func(encoded, password string, p identity.HashParams) (bool, bool, error) {
		hashed.Add(1)
		<-release
		return identity.VerifyPassword(encoded, password, p)
	})
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, addr := range []string{"192.0.2.1", "192.0.2.2"} { // the places of unknown addresses
		wg.Go(func() { _, _, errs[i] = svc.Login(ctx, "heidi", "heidi-password", addr) })
		for identity.GateAdmitted(svc) < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	for hashed.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	for _, addr := range []string{"192.0.2.3", "192.0.2.1"} {
		start := time.Now()
		refused := make(chan error, 1)
		go func() { _, _, err := svc.Login(ctx, "heidi", "heidi-password", addr); refused <- err }()
		var busy *identity.BusyError
		select {
		case err := <-refused:
			if !errors.As(err, &busy) || busy.RetryAfter != identity.BusyRetryAfter {
				t.Fatalf("login from %s beyond capacity: %v, want *BusyError", addr, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("login from %s beyond capacity waited for the blocked hasher", addr)
		}
		t.Logf("refused in %v", time.Since(start))
	}
	if n := hashed.Load(); n != 1 {
		t.Fatalf("%d hashes started; only the one holding the slot may hash", n)
	}
	wg.Go(func() { _, _, errs[2] = svc.Login(ctx, "heidi", "heidi-password", known) })
	for deadline := time.Now().Add(10 * time.Second); identity.GateAdmitted(svc) < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) { // admitted to the kept place, it waits for the slot
			close(release)
			wg.Wait()
			t.Fatalf("the login from an address with a recent success was not admitted: %v", errs[2])
		}
	}
	close(release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("admitted login %d: %v", i, err)
		}
	}
	if n := hashed.Load(); n != 3 {
		t.Fatalf("%d hashes; the three admitted logins hash once each", n)
	}
	if _, _, err := svc.Login(context.Background(), "heidi", "heidi-password", "192.0.2.3"); err != nil {
		t.Fatalf("once the gate is free: %v", err)
	}
}
