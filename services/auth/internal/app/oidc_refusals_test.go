package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	"github.com/plinth-dev/plinth/services/auth/internal/oidctest"
)

// TestOIDCRefusals: every way a callback or the provider's answer can be wrong — a replayed,
// unknown, expired or misdirected state, a refused code, an ID token for another audience,
// expired, unsigned (alg none), with another nonce, or with forged groups signed by a key
// that is not the provider's — is refused with its code and a message saying what failed,
// and creates no user and no token. The ID tokens are the provider's own answers, changed on
// the way (oidctest's Tamper), as an attacker between the provider and Plinth would.
func TestOIDCRefusals(t *testing.T) {
	e := newEnv(t)
	op := startOP(t)
	conn := e.start(t, e.config(t, withProvider(t, op, nil)))
	ctx := ctxT(t)
	oidc := adminpb.NewOIDCServiceClient(conn)
	attacker := foreignKey(t)

	// resign makes the provider's token into another one, signed by its own current key.
	resign := func(change func(oidctest.Claims)) func(string) string {
		return func(tok string) string {
			c := oidctest.ClaimsOf(tok)
			change(c)
			out, err := op.SignIDToken(c)
			if err != nil {
				t.Error(err)
			}
			return out
		}
	}
	for _, tc := range []struct {
		name   string
		tamper func(string) string
		// complete changes the callback before it is completed (nil: as the provider sent it).
		complete func(*adminpb.CompleteSignInRequest)
		code     codes.Code
		msg      string
	}{
		{name: "unknown state", complete: func(r *adminpb.CompleteSignInRequest) { r.State = strings.Repeat("A", 43) },
			code: codes.FailedPrecondition, msg: "state is unknown or was already used"},
		{name: "malformed state", complete: func(r *adminpb.CompleteSignInRequest) { r.State = "x" },
			code: codes.InvalidArgument, msg: "state: is not a state this service issued"},
		{name: "missing code", complete: func(r *adminpb.CompleteSignInRequest) { r.Code = "" },
			code: codes.InvalidArgument, msg: "code: is required"},
		{name: "missing redirect_uri", complete: func(r *adminpb.CompleteSignInRequest) { r.RedirectUri = "" },
			code: codes.InvalidArgument, msg: "redirect_uri: is required"},
		{name: "another redirect_uri", complete: func(r *adminpb.CompleteSignInRequest) { r.RedirectUri = koorCallback },
			code: codes.FailedPrecondition, msg: "begun for another redirect_uri"},
		{name: "another provider", complete: func(r *adminpb.CompleteSignInRequest) { r.Provider = "other" },
			code: codes.FailedPrecondition, msg: "begun with another provider"},
		{name: "code refused by the provider", complete: func(r *adminpb.CompleteSignInRequest) { r.Code = "forged-code" },
			code: codes.Unauthenticated, msg: "the provider refused the code (invalid_grant)"},
		{name: "wrong audience", tamper: resign(func(c oidctest.Claims) { c["aud"] = []string{"other-app"}; c["azp"] = "other-app" }),
			code: codes.Unauthenticated, msg: "is not for this client (audience)"},
		{name: "expired", tamper: resign(func(c oidctest.Claims) {
			c["exp"] = time.Now().Add(-time.Hour).Unix()
			c["iat"] = time.Now().Add(-2 * time.Hour).Unix()
		}), code: codes.Unauthenticated, msg: "has expired"},
		{name: "wrong nonce", tamper: resign(func(c oidctest.Claims) { c["nonce"] = "a-nonce-of-another-sign-in" }),
			code: codes.Unauthenticated, msg: "does not carry this sign-in's nonce"},
		{name: "another issuer", tamper: resign(func(c oidctest.Claims) { c["iss"] = "https://evil.example" }),
			code: codes.Unauthenticated, msg: "names another issuer"},
		{name: "unsigned (alg none)", tamper: func(tok string) string { return oidctest.Unsigned(oidctest.ClaimsOf(tok)) },
			code: codes.Unauthenticated, msg: "unsigned tokens are refused"},
		{name: "forged groups signed by another key", tamper: func(tok string) string {
			c := oidctest.ClaimsOf(tok)
			c["groups"] = []string{"plinth-admins"}
			out, err := oidctest.SignWith(attacker, op.KeyID(), c) // even under the provider's kid
			if err != nil {
				t.Error(err)
			}
			return out
		}, code: codes.Unauthenticated, msg: "is not signed by a key of the provider"},
		{name: "garbage", tamper: func(string) string { return "not.a.jwt" },
			code: codes.Unauthenticated, msg: "the ID token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			users, tokens := e.oidcCounts(t)
			op.Tamper(tc.tamper)
			defer op.Tamper(nil)
			b := begin(t, ctx, oidc, callbackURL)
			// bob: a viewer who is in no admin group — the forgery tries to make him one.
			cb := newBrowser(t).signInAt(b.GetAuthorizationUrl(), "bob", "bob-op-password")
			req := callbackOf(cb)
			if tc.complete != nil {
				tc.complete(req)
			}
			_, err := oidc.CompleteSignIn(ctx, req)
			if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.msg) {
				t.Fatalf("CompleteSignIn: %v, want %s containing %q", err, tc.code, tc.msg)
			}
			for _, secret := range []string{req.GetCode(), req.GetState(), clientSecret} {
				if secret != "" && len(secret) > 8 && strings.Contains(status.Convert(err).Message(), secret) {
					t.Errorf("the refusal quotes a secret: %v", err)
				}
			}
			if u, tk := e.oidcCounts(t); u != users || tk != tokens {
				t.Fatalf("a refused sign-in created %d users and %d tokens", u-users, tk-tokens)
			}
		})
	}
	e.assertNoOIDCSecrets(t)
}

// TestOIDCStateIsSingleUseAndExpires: a callback replayed — by anyone, with the code and state
// it carried — is refused once the first completed it, and so is a state past its expiry
// (even one never used), on any auth replica: the states are in the database they share.
func TestOIDCStateIsSingleUseAndExpires(t *testing.T) {
	e := newEnv(t)
	op := startOP(t)
	cfg := e.config(t, withProvider(t, op, nil))
	first, second := e.start(t, cfg), e.start(t, cfg)
	ctx := ctxT(t)
	a, b := adminpb.NewOIDCServiceClient(first), adminpb.NewOIDCServiceClient(second)

	// Begun on one replica, completed on the other; replayed on either.
	begun := begin(t, ctx, a, callbackURL)
	req := callbackOf(newBrowser(t).signInAt(begun.GetAuthorizationUrl(), "alice", "alice-op-password"))
	if _, err := b.CompleteSignIn(ctx, req); err != nil {
		t.Fatalf("complete on the other replica: %v", err)
	}
	users, tokens := e.oidcCounts(t)
	for _, c := range []adminpb.OIDCServiceClient{a, b} {
		_, err := c.CompleteSignIn(context.WithoutCancel(ctx), req)
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "already used") {
			t.Fatalf("replayed callback: %v, want FailedPrecondition", err)
		}
	}

	begun = begin(t, ctx, a, callbackURL)
	req = callbackOf(newBrowser(t).signInAt(begun.GetAuthorizationUrl(), "alice", "alice-op-password"))
	e.exec(t, `UPDATE oidc_states SET expires_at = now() - interval '1 second'`)
	if _, err := b.CompleteSignIn(ctx, req); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired state: %v, want FailedPrecondition", err)
	}
	if _, err := b.CompleteSignIn(ctx, req); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("an expired state is gone once tried: %v", err)
	}
	if u, tk := e.oidcCounts(t); u != users || tk != tokens {
		t.Fatalf("replays created %d users and %d tokens", u-users, tk-tokens)
	}
}

// TestOIDCBeginRefusals: an unknown provider, a malformed one, and a redirect_uri the
// provider is not configured with (an attacker's site, to collect codes) are refused before
// anything is stored.
func TestOIDCBeginRefusals(t *testing.T) {
	e := newEnv(t)
	op := startOP(t)
	conn := e.start(t, e.config(t, withProvider(t, op, nil)))
	ctx := ctxT(t)
	oidc := adminpb.NewOIDCServiceClient(conn)
	for _, tc := range []struct {
		req  *adminpb.BeginSignInRequest
		code codes.Code
		msg  string
	}{
		{&adminpb.BeginSignInRequest{}, codes.InvalidArgument, "provider: is required"},
		{&adminpb.BeginSignInRequest{Provider: "Evil/../x"}, codes.InvalidArgument, "provider: is not a provider name"},
		{&adminpb.BeginSignInRequest{Provider: "github"}, codes.NotFound, `no OpenID provider "github" is configured`},
		{&adminpb.BeginSignInRequest{Provider: "testop", RedirectUri: "https://evil.example/steal"}, codes.InvalidArgument, "redirect_uri: is not one of provider testop's redirect_urls"},
		{&adminpb.BeginSignInRequest{Provider: "testop", RedirectUri: "bad\x00"}, codes.InvalidArgument, "redirect_uri"},
	} {
		_, err := oidc.BeginSignIn(ctx, tc.req)
		if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.msg) {
			t.Errorf("BeginSignIn(%v): %v, want %s containing %q", tc.req, err, tc.code, tc.msg)
		}
	}
	// A provider that is down: Unavailable, and password login still works (auth started).
	if err := op.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := oidc.BeginSignIn(ctx, &adminpb.BeginSignInRequest{Provider: "testop"}); status.Code(err) != codes.Unavailable {
		t.Fatalf("BeginSignIn with the provider down: %v, want Unavailable", err)
	}
}
