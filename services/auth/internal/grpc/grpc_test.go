package grpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
	"github.com/plinth-dev/plinth/services/auth/internal/sso"
)

func TestToStatusMapsEachDomainErrorToOneCode(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	cases := []struct {
		err  error
		code codes.Code
		msg  string
	}{
		{&identity.FieldError{Field: "username", Reason: "is bad"}, codes.InvalidArgument, "username: is bad"},
		{fmt.Errorf("wrapped: %w", identity.ErrBadLogin), codes.Unauthenticated, badLoginMessage},
		{&identity.LockedError{RetryAfter: 1500 * time.Millisecond}, codes.ResourceExhausted, "too many failed logins; retry after 2s"},
		{&identity.BusyError{RetryAfter: identity.BusyRetryAfter}, codes.ResourceExhausted, "too many logins at once; retry after 1s"},
		{&identity.TokenQuotaError{Username: "alice", Live: 100, Limit: 100}, codes.ResourceExhausted,
			"quota: user alice holds 100 live tokens, at most 100 allowed (PLINTH_AUTH_MAX_TOKENS_PER_USER); sign out elsewhere or ask an admin to revoke them"},
		{identity.ErrNotFound, codes.NotFound, "user not found"},
		{identity.ErrExists, codes.AlreadyExists, "user already exists"},
		{identity.ErrNoToken, codes.Unauthenticated, authn.MsgNoToken},
		{identity.ErrBadToken, codes.Unauthenticated, authn.MsgInvalidToken},
		{identity.ErrNotAdmin, codes.PermissionDenied, "admin rights required"},
		{&identity.RoleError{Denied: errors.New("role viewer may not call /plinth.auth.v1.AdminService/ListUsers (user administration)")},
			codes.PermissionDenied, "role viewer may not call /plinth.auth.v1.AdminService/ListUsers (user administration)"},
		{identity.ErrOwnAccount, codes.FailedPrecondition, "you cannot disable your own account; another admin can"},
		{identity.ErrOwnRole, codes.FailedPrecondition, "you cannot change your own role; another admin can"},
		{identity.ErrLastAdmin, codes.FailedPrecondition, "the last enabled admin cannot lose the admin role; make another user an admin first"},
		{identity.ErrPasswordLoginOff, codes.FailedPrecondition, identity.ErrPasswordLoginOff.Error()},
		{identity.ErrAccountDisabled, codes.PermissionDenied, "this account is disabled; ask an admin"},
		{&sso.StateError{Why: "has expired; sign in again"}, codes.FailedPrecondition, "state has expired; sign in again"},
		{&sso.RefusedError{Provider: "dex", Why: "the ID token has expired"}, codes.Unauthenticated, "sign-in with dex refused: the ID token has expired"},
		{&sso.NoRoleError{Provider: "dex", Claim: "groups"}, codes.PermissionDenied,
			`provider dex signed you in, but no value of your "groups" claim maps to a Plinth role; ask an admin to map one`},
		{&sso.NotFoundError{Provider: "gh"}, codes.NotFound, `no OpenID provider "gh" is configured`},
		// The cause (a URL, a transport error) is logged, never sent.
		{&sso.UnavailableError{Provider: "dex", Cause: errors.New("dial tcp 10.0.0.1:443: connection refused")}, codes.Unavailable,
			"OpenID provider dex cannot be reached; retry later"},
		{context.DeadlineExceeded, codes.DeadlineExceeded, "deadline exceeded"},
		{errors.New(`ERROR: relation "users" does not exist (SQLSTATE 42P01)`), codes.Internal, "internal error"},
	}
	for _, c := range cases {
		st := status.Convert(toStatus(context.Background(), log, c.err))
		if st.Code() != c.code || st.Message() != c.msg {
			t.Errorf("%v → %v %q, want %v %q", c.err, st.Code(), st.Message(), c.code, c.msg)
		}
	}
}

func TestClientAddressBelievesForwardedForOnlyFromTrustedProxies(t *testing.T) {
	c, err := NewClientAddress([]string{"10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewClientAddress([]string{"not-a-cidr"}); err == nil {
		t.Fatal("bad CIDR accepted")
	}
	ctx := func(from string, xff ...string) context.Context {
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP(from), Port: 5555}})
		if len(xff) > 0 {
			ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("x-forwarded-for", xff[0]))
		}
		return ctx
	}
	cases := []struct {
		ctx  context.Context
		want string
	}{
		{context.Background(), ""},
		{ctx("192.0.2.7"), "192.0.2.7"},
		{ctx("192.0.2.7", "203.0.113.9"), "192.0.2.7"},                          // untrusted peer: header ignored
		{ctx("10.1.2.3", "203.0.113.9"), "203.0.113.9"},                         // gateway forwards the client
		{ctx("10.1.2.3", "198.51.100.1, 203.0.113.9, 10.9.9.9"), "203.0.113.9"}, // right-most untrusted
		{ctx("10.1.2.3", "garbage"), "10.1.2.3"},
		{ctx("::ffff:192.0.2.8"), "192.0.2.8"},
	}
	for i, tc := range cases {
		if got := c.Of(tc.ctx); got != tc.want {
			t.Errorf("case %d: %q, want %q", i, got, tc.want)
		}
	}
	for _, lo := range []string{"127.0.0.1/32", "10.0.0.0/0", "::1/128", "::/0"} {
		if _, err := NewClientAddress([]string{lo}); !errors.Is(err, ErrLoopbackProxy) {
			t.Errorf("trusted proxy %s: %v, want ErrLoopbackProxy", lo, err)
		}
	}
}

// TestGatewayClientAddressIsTheLastEntry: on the gateway listener the gateway wrote the last
// x-forwarded-for entry; entries before it are its client's and never chosen.
func TestGatewayClientAddressIsTheLastEntry(t *testing.T) {
	c := GatewayClientAddress()
	unix := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.UnixAddr{Name: "@", Net: "unix"}})
	with := func(xff string) context.Context {
		return metadata.NewIncomingContext(unix, metadata.Pairs("x-forwarded-for", xff))
	}
	for xff, want := range map[string]string{
		"203.0.113.9":               "203.0.113.9",
		"198.51.100.1, 203.0.113.9": "203.0.113.9",
		"198.51.100.1, garbage":     "",
		"::ffff:192.0.2.8":          "192.0.2.8",
		"198.51.100.1, 127.0.0.1":   "127.0.0.1",
		"":                          "",
	} {
		if got := c.Of(with(xff)); got != want {
			t.Errorf("x-forwarded-for %q: %q, want %q", xff, got, want)
		}
	}
	if got := c.Of(unix); got != "" {
		t.Errorf("no header: %q", got)
	}
}
