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
type checkerFunc func(ctx context.Context, token string) (string, bool, error)

func (f checkerFunc) CheckToken(ctx context.Context, token string) (string, bool, error) {
	return f(ctx, token)
}

func TestVerifier(t *testing.T) {
	clk := newClock()
	var calls atomic.Int32
	valid := map[string]string{"plt_good": "user-1"}
	down := false
	v, err := NewVerifier(checkerFunc(func(_ context.Context, token string) (string, bool, error) {
		calls.Add(1)
		if down {
			return "", false, errors.New("connection refused")
		}
		id, ok := valid[token]
		return id, ok, nil
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
	v, _ = NewVerifier(checkerFunc(func(context.Context, string) (string, bool, error) {
		v.Revoke(TokenID("plt_x")) // the revocation event lands while auth is answering "yes"
		return "u", true, nil
	}), Options{CacheTTL: 5 * time.Second, Now: clk.now})
	if _, err := v.Authenticate(incoming("Bearer plt_x"), "/x.Y/Z"); err != nil {
		t.Fatal(err)
	}
	if v.CacheLen() != 0 {
		t.Fatal("an answer older than the revocation was cached")
	}
}

func TestVerifierOptions(t *testing.T) {
	if _, err := NewVerifier(nil, Options{CacheTTL: time.Minute}); err == nil {
		t.Fatal("a TTL over 30 s must be refused")
	}
}
