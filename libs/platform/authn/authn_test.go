package authn

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	_ "github.com/plinth-dev/plinth/libs/api/all" // the methods' kinds the role checks read
	"github.com/plinth-dev/plinth/libs/platform/authz"
)

func incoming(auth ...string) context.Context {
	md := metadata.MD{}
	for _, a := range auth {
		md.Append("authorization", a)
	}
	return metadata.NewIncomingContext(context.Background(), md)
}

func TestBearerToken(t *testing.T) {
	cases := map[string]struct {
		ctx  context.Context
		want string
	}{
		"none":          {context.Background(), ""},
		"bearer":        {incoming("Bearer plt_abc"), "plt_abc"},
		"lower scheme":  {incoming("bearer plt_abc"), "plt_abc"},
		"basic only":    {incoming("Basic dXNlcjpwdw=="), ""},
		"empty token":   {incoming("Bearer   "), ""},
		"second header": {incoming("Basic x", "Bearer plt_2"), "plt_2"},
	}
	for name, c := range cases {
		if got := BearerToken(c.ctx); got != c.want {
			t.Errorf("%s: got %q want %q", name, got, c.want)
		}
	}
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock                   { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func TestCacheTTLAndBound(t *testing.T) {
	clk := newClock()
	c := NewCache(10*time.Second, 2, clk.now)
	c.Put("a", Account{ID: "1"})
	c.Put("b", Account{ID: "2"})
	if _, ok := c.Get("a"); !ok { // a is now most recently used
		t.Fatal("a missing")
	}
	c.Put("c", Account{ID: "3"}) // evicts b, the least recently used
	if _, ok := c.Get("b"); ok {
		t.Fatal("b should have been evicted")
	}
	if c.Len() != 2 {
		t.Fatalf("len %d", c.Len())
	}
	clk.advance(10 * time.Second)
	if _, ok := c.Get("a"); ok {
		t.Fatal("a should have expired")
	}
	c.Revoke("c")
	if _, ok := c.Get("c"); ok {
		t.Fatal("c should be revoked")
	}
}

// checkerFunc lets a test play the auth service.
type checkerFunc func(ctx context.Context, token string) (Account, bool, error)

func (f checkerFunc) CheckToken(ctx context.Context, token string) (Account, bool, error) {
	return f(ctx, token)
}

func TestVerifier(t *testing.T) {
	clk := newClock()
	var calls atomic.Int32
	valid := map[string]string{"plt_good": "user-1"}
	down := false
	v, err := NewVerifier(checkerFunc(func(_ context.Context, token string) (Account, bool, error) {
		calls.Add(1)
		if down {
			return Account{}, false, errors.New("connection refused")
		}
		id, ok := valid[token]
		return Account{ID: id, Role: authz.Operator}, ok, nil
	}), Options{CacheTTL: 5 * time.Second, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	wantCode := func(ctx context.Context, code codes.Code, msg string) {
		t.Helper()
		_, err := v.Authenticate(ctx, "/x.Y/Z")
		if status.Code(err) != code || (msg != "" && status.Convert(err).Message() != msg) {
			t.Fatalf("got %v, want %v %q", err, code, msg)
		}
	}
	wantCode(context.Background(), codes.Unauthenticated, MsgNoToken)
	wantCode(incoming("Bearer plt_bad"), codes.Unauthenticated, MsgInvalidToken)

	ctx, err := v.Authenticate(incoming("Bearer plt_good"), "/x.Y/Z")
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := AccountFrom(ctx); !ok || a.ID != "user-1" {
		t.Fatalf("account %v %v", a, ok)
	}
	before := calls.Load()
	if _, err := v.Authenticate(incoming("Bearer plt_good"), "/x.Y/Z"); err != nil || calls.Load() != before {
		t.Fatalf("warm cache must answer without asking auth (err %v, calls %d→%d)", err, before, calls.Load())
	}
	// Auth down: cached tokens still pass, uncached ones are Unavailable (not "log in again").
	down = true
	if _, err := v.Authenticate(incoming("Bearer plt_good"), "/x.Y/Z"); err != nil {
		t.Fatal(err)
	}
	wantCode(incoming("Bearer plt_other"), codes.Unavailable, "")
	down = false
	// Revocation drops the cached answer at once.
	delete(valid, "plt_good")
	v.Revoke(TokenID("plt_good"))
	wantCode(incoming("Bearer plt_good"), codes.Unauthenticated, MsgInvalidToken)
}

func TestVerifierDoesNotCacheAnswerRacingARevocation(t *testing.T) {
	clk := newClock()
	var v *Verifier
	v, _ = NewVerifier(checkerFunc(func(context.Context, string) (Account, bool, error) {
		v.Revoke(TokenID("plt_x")) // the revocation event lands while auth is answering "yes"
		return Account{ID: "u", Role: authz.Operator}, true, nil
	}), Options{CacheTTL: 5 * time.Second, Now: clk.now})
	// The call is refused too: bound to the token after its revocation ended the token's
	// calls, it would otherwise run on as if nothing had happened.
	if _, err := v.Authenticate(incoming("Bearer plt_x"), "/x.Y/Z"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a call checked while its token was revoked: %v, want Unauthenticated", err)
	}
	if v.CacheLen() != 0 || v.CallsLen() != 0 {
		t.Fatal("an answer older than the revocation was cached or bound")
	}
}

// TestLifetimes: End ends exactly the calls bound to its key, with ErrTokenEnded as their
// cause, and a call that ends on its own is forgotten.
func TestLifetimes(t *testing.T) {
	var l Lifetimes
	a := l.Bind(context.Background(), "a")
	other, cancelOther := context.WithCancel(context.Background())
	b := l.Bind(other, "b")
	if l.Len() != 2 {
		t.Fatalf("len %d", l.Len())
	}
	cancelOther()
	<-b.Done()
	for l.Len() != 1 { // forgotten by an AfterFunc, in its own goroutine
		time.Sleep(time.Millisecond)
	}
	if n := l.End("a"); n != 1 {
		t.Fatalf("End ended %d calls", n)
	}
	<-a.Done()
	if !errors.Is(context.Cause(a), ErrTokenEnded) || status.Code(context.Cause(a)) != codes.Unauthenticated {
		t.Fatalf("cause %v", context.Cause(a))
	}
	if errors.Is(context.Cause(b), ErrTokenEnded) || l.Len() != 0 {
		t.Fatalf("the other call: cause %v; %d bound", context.Cause(b), l.Len())
	}
	// A call checked before the end and bound after it ends at once.
	late := l.Bind(context.Background(), "a")
	if !errors.Is(context.Cause(late), ErrTokenEnded) || l.Len() != 0 {
		t.Fatalf("a call bound after its key ended: cause %v; %d bound", context.Cause(late), l.Len())
	}
	if fresh := l.Bind(context.Background(), "c"); fresh.Err() != nil {
		t.Fatal("another key's call ended")
	}
}

func TestVerifierOptions(t *testing.T) {
	if _, err := NewVerifier(nil, Options{CacheTTL: time.Minute}); err == nil {
		t.Fatal("a TTL over 30 s must be refused")
	}
}

// TestVerifierEnforcesRoles: after the token check, the account's role must allow the method
// (authz.Check), on the first call and on every cached one; a denial is PermissionDenied with
// authz's message, and an account without a known role may call nothing.
func TestVerifierEnforcesRoles(t *testing.T) {
	clk := newClock()
	accounts := map[string]Account{
		"plt_viewer":   {ID: "v", Name: "vera", Role: authz.Viewer},
		"plt_operator": {ID: "o", Name: "otto", Role: authz.Operator},
		"plt_norole":   {ID: "n", Name: "nobody"},
	}
	var calls atomic.Int32
	v, err := NewVerifier(checkerFunc(func(_ context.Context, token string) (Account, bool, error) {
		calls.Add(1)
		a, ok := accounts[token]
		return a, ok, nil
	}), Options{CacheTTL: 5 * time.Second, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	const (
		read  = "/cnct.kaas.api.Cluster/GetClusterList"
		write = "/cnct.kaas.api.Cluster/CreateCluster"
		admin = "/plinth.auth.v1.AdminService/ListUsers"
	)
	cases := []struct {
		token, method string
		ok            bool
	}{
		{"plt_viewer", read, true},
		{"plt_viewer", write, false},
		{"plt_viewer", "/proto.LVService/CreateLV", false},
		{"plt_viewer", admin, false},
		{"plt_operator", write, true},
		{"plt_operator", admin, false},
		{"plt_norole", read, false},
	}
	// Twice: the second round is answered from the cache and must refuse the same calls.
	for round := range 2 {
		for _, c := range cases {
			ctx, err := v.Authenticate(incoming("Bearer "+c.token), c.method)
			if c.ok {
				if err != nil {
					t.Fatalf("round %d: %s calling %s: %v", round, c.token, c.method, err)
				}
				if a, _ := AccountFrom(ctx); a != accounts[c.token] {
					t.Fatalf("round %d: account %+v", round, a)
				}
				continue
			}
			if status.Code(err) != codes.PermissionDenied {
				t.Fatalf("round %d: %s calling %s: %v, want PermissionDenied", round, c.token, c.method, err)
			}
			if want := authz.Check(accounts[c.token].Role, c.method).Error(); status.Convert(err).Message() != want {
				t.Fatalf("message %q, want %q", status.Convert(err).Message(), want)
			}
		}
		if round == 0 {
			calls.Store(0)
		}
	}
	if calls.Load() != 0 {
		t.Fatalf("the second round asked auth %d times: the cached path was not exercised", calls.Load())
	}
}

// TestAccountFromHeaders: the role comes from auth's header when it is one authz knows; a
// missing or unknown one leaves no role (no rights), never a default.
func TestAccountFromHeaders(t *testing.T) {
	a := Account{ID: "id-1", Name: "alice", Role: authz.Viewer}
	if got := AccountFromHeaders(a.Headers()); got != a {
		t.Fatalf("round trip: %+v", got)
	}
	for name, md := range map[string]metadata.MD{
		"missing": metadata.Pairs(AccountHeader, "id-1", NameHeader, "alice"),
		"unknown": metadata.Pairs(AccountHeader, "id-1", RoleHeader, "root"),
		"empty":   metadata.Pairs(AccountHeader, "id-1", RoleHeader, ""),
	} {
		if got := AccountFromHeaders(md); got.Role != "" || got.ID != "id-1" {
			t.Errorf("%s: %+v", name, got)
		}
	}
}
