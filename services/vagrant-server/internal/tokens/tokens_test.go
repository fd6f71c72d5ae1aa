package tokens

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mr-tron/base58"
	"golang.org/x/crypto/blake2b"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/authz"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens/keystoretest"
)

// memKeys is an in-memory KeyStore (and GrantStore) for the rules; it and the Postgres one
// pass keystoretest.
type memKeys struct {
	mu     sync.Mutex
	keys   map[string][]byte
	grants map[string]Grant
}

func (m *memKeys) AddGrant(_ context.Context, g Grant, admit func(live int) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.grants == nil {
		m.grants = map[string]Grant{}
	}
	if admit != nil {
		live := 0
		for _, h := range m.grants {
			if h.Owner == g.Owner && !h.Revoked && (h.ExpiresAt.IsZero() && !h.Invite || h.ExpiresAt.After(time.Now())) {
				live++
			}
		}
		if err := admit(live); err != nil {
			return err
		}
	}
	if _, ok := m.grants[string(g.TokenID)]; ok {
		return errors.New("duplicate grant")
	}
	m.grants[string(g.TokenID)] = g
	return nil
}

func (m *memKeys) RevokeUserGrants(_ context.Context, userID string, _ time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for id, g := range m.grants {
		if g.UserID == userID && !g.Revoked {
			g.Revoked = true
			m.grants[id] = g
			n++
		}
	}
	return n, nil
}

func (m *memKeys) Grant(_ context.Context, id []byte) (Grant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g, ok := m.grants[string(id)]; ok {
		return g, nil
	}
	return Grant{}, ErrUnknownGrant
}

func (m *memKeys) CreateFirstKey(_ context.Context, id string, key []byte) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.keys) > 0 {
		return false, nil
	}
	m.keys = map[string][]byte{id: key}
	return true, nil
}

func (m *memKeys) Key(_ context.Context, id string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k, ok := m.keys[id]; ok {
		return k, nil
	}
	return nil, ErrUnknownKey
}

// TestMemKeysConformance: the fake the rules are tested with keeps keys as the Postgres store
// does (a memory store cannot restart: its restart keeps the same store).
func TestMemKeysConformance(t *testing.T) {
	keystoretest.Run(t, func(*testing.T) keystoretest.KeyStore { return &memKeys{} },
		func(_ *testing.T, s keystoretest.KeyStore) keystoretest.KeyStore { return s }, ErrUnknownKey)
}

func TestTokenIsUpstreamsFormat(t *testing.T) {
	key := []byte(strings.Repeat("k", KeySize))
	body := &vagrant.Token{User: DefaultUser, Login: true, TokenId: []byte("0123456789abcdef")}
	tok, err := Sign(DefaultKeyID, key, map[string]string{"m": "v"}, body)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base58.Decode(tok)
	if err != nil || !strings.HasPrefix(string(raw), Magic) {
		t.Fatalf("not base58 of %q + transport: %v", Magic, err)
	}
	var tt vagrant.TokenTransport
	if err := proto.Unmarshal(raw[len(Magic):], &tt); err != nil {
		t.Fatal(err)
	}
	h, _ := blake2b.New256(key)
	h.Write(tt.Body)
	if string(tt.Signature) != string(h.Sum(nil)) || tt.KeyId != DefaultKeyID || tt.Metadata["m"] != "v" {
		t.Fatalf("transport %v: want keyed BLAKE2b-256 of the body under key id %s", &tt, DefaultKeyID)
	}
	var got vagrant.Token
	if err := proto.Unmarshal(tt.Body, &got); err != nil || !proto.Equal(&got, body) {
		t.Fatalf("body %v, want %v", &got, body)
	}
}

func TestVerifyRefusesForgeriesAndExpiry(t *testing.T) {
	key := []byte(strings.Repeat("k", KeySize))
	now := time.Now()
	valid, _ := Sign(DefaultKeyID, key, nil, &vagrant.Token{Login: true, User: DefaultUser})
	tt, _ := Parse(valid)

	tampered := proto.Clone(tt).(*vagrant.TokenTransport)
	tampered.Body = append(tampered.Body, 0x28, 0x01) // field 5 (invite) = true appended
	otherKey, _ := Sign(DefaultKeyID, []byte(strings.Repeat("x", KeySize)), nil, &vagrant.Token{Login: true})
	otherTT, _ := Parse(otherKey)
	expired, _ := Sign(DefaultKeyID, key, nil, &vagrant.Token{Invite: true, ValidUntil: timestampOf(now.Add(-time.Second))})
	expiredTT, _ := Parse(expired)

	cases := []struct {
		name string
		tt   *vagrant.TokenTransport
		want error
	}{
		{"tampered body", tampered, ErrInvalid},
		{"signed by another key", otherTT, ErrInvalid},
		{"expired", expiredTT, ErrExpired},
	}
	for _, c := range cases {
		if _, err := Verify(c.tt, key, now); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := Verify(tt, key, now); err != nil {
		t.Fatalf("valid token refused: %v", err)
	}
	for _, bad := range []string{"", "0OIl", base58.Encode([]byte("wp")), base58.Encode([]byte("xx24abc")), base58.Encode([]byte(Magic + "\xff\xff"))} {
		if _, err := Parse(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestIssuerFlows(t *testing.T) {
	ctx := context.Background()
	clock := time.Now()
	keys := &memKeys{}
	iss := NewIssuer(keys, keys, func() time.Time { return clock })

	if _, err := iss.LoginToken(ctx, Caller{Role: authz.Admin}, ""); err == nil {
		t.Fatal("a login token was issued before bootstrap")
	}
	boot, err := iss.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := iss.Bootstrap(ctx); !errors.Is(err, ErrBootstrapped) {
		t.Fatalf("second bootstrap: %v", err)
	}
	admin, err := iss.Authenticate(ctx, boot, "UpsertBasis")
	if err != nil || admin.Role != authz.Admin || admin.Owner != "bootstrap" {
		t.Fatalf("bootstrap token: %+v, %v; want an admin's owned by bootstrap", admin, err)
	}
	invite, err := iss.InviteToken(ctx, admin, "", "1h", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := check(iss, ctx, invite, "UpsertBasis"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an invite must not authenticate calls: %v", err)
	}
	if _, err := iss.ConvertInvite(ctx, boot); !errors.Is(err, ErrInvalid) {
		t.Fatalf("converting a login token: %v", err)
	}
	login, err := iss.ConvertInvite(ctx, invite)
	if err != nil || check(iss, ctx, login, "ListBasis") != nil {
		t.Fatalf("converted login token: %v", err)
	}
	clock = clock.Add(61 * time.Minute)
	if _, err := iss.ConvertInvite(ctx, invite); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired invite: %v", err)
	}
	if err := check(iss, ctx, login, "ListBasis"); err != nil {
		t.Fatalf("login tokens do not expire (upstream): %v", err)
	}
	for _, d := range []string{"", "-1h", "0s", "tomorrow"} {
		if _, err := iss.InviteToken(ctx, admin, "", d, nil); !errors.Is(err, ErrBadDuration) {
			t.Errorf("InviteToken(%q) = %v", d, err)
		}
	}
	epInvite, _ := iss.InviteToken(ctx, admin, "", "1h", &vagrant.Token_Entrypoint{DeploymentId: "d1"})
	epLogin, err := iss.ConvertInvite(ctx, epInvite)
	if err != nil {
		t.Fatal(err)
	}
	if err := check(iss, ctx, epLogin, "UpsertBasis"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("entrypoint token on a normal call: %v", err)
	}
	if err := check(iss, ctx, epLogin, "EntrypointConfig"); err != nil {
		t.Fatalf("entrypoint token on an entrypoint call: %v", err)
	}
}

func timestampOf(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

// Accepted tokens are remembered, but a remembered token with an expiry still expires.
func TestRememberedLoginTokenStillExpires(t *testing.T) {
	ctx := context.Background()
	clock := time.Now()
	keys := &memKeys{}
	iss := NewIssuer(keys, keys, func() time.Time { return clock })
	iss.CheckSessionsWith(func(context.Context, []byte, string) (Caller, error) { return Caller{Role: authz.Viewer}, nil })
	if _, err := iss.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	key, err := keys.Key(ctx, DefaultKeyID)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Sign(DefaultKeyID, key, nil, &vagrant.Token{Login: true, User: DefaultUser, ValidUntil: timestampOf(clock.Add(time.Minute))})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second call is answered from memory
		if err := check(iss, ctx, tok, "ListBasis"); err != nil {
			t.Fatalf("login token with an expiry ahead refused: %v", err)
		}
	}
	clock = clock.Add(2 * time.Minute)
	if err := check(iss, ctx, tok, "ListBasis"); !errors.Is(err, ErrExpired) {
		t.Fatalf("remembered token past its expiry: %v, want ErrExpired", err)
	}
}

// TestTokensCarryRoleAndOwner: issue #36's "any holder of a Vagrant login/invite token (no
// role at all) is root". Every login and invite token has a role and an owner: the first is
// an admin's, owned by "bootstrap"; a token made with another gets the role asked for — never
// above its maker's — and its maker as owner, and an invite passes both to its login token;
// the role decides what the token may call; a token without a grant (signed before grants
// existed, or forged with the key) is refused.
func TestTokensCarryRoleAndOwner(t *testing.T) {
	ctx := context.Background()
	keys := &memKeys{}
	iss := NewIssuer(keys, keys, nil)
	boot, err := iss.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := iss.Authenticate(ctx, boot, "GenerateLoginToken")
	if err != nil {
		t.Fatal(err)
	}
	viewerTok, err := iss.LoginToken(ctx, admin, authz.Viewer)
	if err != nil {
		t.Fatal(err)
	}
	viewer, err := iss.Authenticate(ctx, viewerTok, "ListBasis")
	if err != nil || viewer.Role != authz.Viewer || viewer.Owner != "token:"+hex.EncodeToString(admin.TokenID) {
		t.Fatalf("viewer token: %+v, %v; want a viewer's owned by its maker", viewer, err)
	}
	var notAllowed *NotAllowedError
	for _, m := range []string{"QueueJob", "UpsertTarget", "UpsertBasis", "RunnerConfig", "RunnerJobStream", "GenerateLoginToken"} {
		for range 2 { // the second answer comes from the remembered token
			if _, err := iss.Authenticate(ctx, viewerTok, m); !errors.As(err, &notAllowed) {
				t.Fatalf("a viewer's login token calling %s: %v, want NotAllowedError", m, err)
			}
		}
	}
	operatorTok, err := iss.LoginToken(ctx, admin, authz.Operator)
	if err != nil {
		t.Fatal(err)
	}
	operator, err := iss.Authenticate(ctx, operatorTok, "QueueJob")
	if err != nil || operator.Role != authz.Operator {
		t.Fatalf("operator token on QueueJob: %+v, %v", operator, err)
	}
	if _, err := iss.Authenticate(ctx, operatorTok, "GenerateLoginToken"); !errors.As(err, &notAllowed) {
		t.Fatalf("an operator's token making tokens: %v", err)
	}
	if _, err := iss.LoginToken(ctx, operator, authz.Admin); !errors.Is(err, ErrRoleTooHigh) {
		t.Fatalf("an operator asking for an admin's token: %v, want ErrRoleTooHigh", err)
	}
	// An invite passes its role and owner on.
	invite, err := iss.InviteToken(ctx, admin, authz.Viewer, "1h", nil)
	if err != nil {
		t.Fatal(err)
	}
	converted, err := iss.ConvertInvite(ctx, invite)
	if err != nil {
		t.Fatal(err)
	}
	c, err := iss.Authenticate(ctx, converted, "ListBasis")
	if err != nil || c.Role != authz.Viewer || c.Owner != viewer.Owner {
		t.Fatalf("converted invite: %+v, %v; want the invite's viewer role and owner", c, err)
	}
	if _, err := iss.Authenticate(ctx, converted, "QueueJob"); !errors.As(err, &notAllowed) {
		t.Fatalf("a viewer's converted invite queueing: %v", err)
	}
	// A well-signed token the server never granted anything (an upstream-era token).
	key, _ := keys.Key(ctx, DefaultKeyID)
	legacy, _ := Sign(DefaultKeyID, key, nil, &vagrant.Token{Login: true, User: DefaultUser, TokenId: []byte("0123456789abcdef")})
	if _, err := iss.Authenticate(ctx, legacy, "ListBasis"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a login token without a grant: %v, want ErrInvalid", err)
	}
	legacyInvite, _ := Sign(DefaultKeyID, key, nil, &vagrant.Token{Invite: true, TokenId: []byte("fedcba9876543210"),
		ValidUntil: timestampOf(time.Now().Add(time.Hour))})
	if _, err := iss.ConvertInvite(ctx, legacyInvite); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an invite without a grant: %v, want ErrInvalid", err)
	}
}

// Decoding costs the square of a token's length: an over-long token is refused before it.
// (BenchmarkParseHugeToken measures the refusal.)
func TestParseRefusesOverlongTokensBeforeDecoding(t *testing.T) {
	for _, n := range []int{MaxLen + 1, 1 << 20} {
		_, err := Parse(strings.Repeat("z", n))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "longer than") {
			t.Errorf("Parse of a %d-byte token = %v, want ErrInvalid (too long)", n, err)
		}
	}
}

func BenchmarkParseHugeToken(b *testing.B) {
	huge := strings.Repeat("z", 1<<20)
	for b.Loop() {
		if _, err := Parse(huge); err == nil {
			b.Fatal("accepted")
		}
	}
}

// check is Authenticate's refusal, for the cases that only look at that.
func check(iss *Issuer, ctx context.Context, token, method string) error {
	_, err := iss.Authenticate(ctx, token, method)
	return err
}

// TestIssuerTokenQuota: with LimitTokens, an owner's login tokens, invites and the login
// tokens converted from its invites count together; one beyond is a *QuotaError and no
// token; an expired invite no longer counts; another owner's quota is its own.
func TestIssuerTokenQuota(t *testing.T) {
	ctx := context.Background()
	keys := &memKeys{}
	clock := time.Now()
	iss := NewIssuer(keys, keys, func() time.Time { return clock })
	iss.LimitTokens(Quota{MaxPerOwner: 3})
	boot, err := iss.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := iss.Authenticate(ctx, boot, "GenerateLoginToken")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := iss.LoginToken(ctx, admin, authz.Viewer); err != nil {
		t.Fatal(err)
	}
	invite, err := iss.InviteToken(ctx, admin, authz.Viewer, "1s", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := iss.ConvertInvite(ctx, invite); err != nil {
		t.Fatal(err)
	}
	var qe *QuotaError
	if _, err := iss.LoginToken(ctx, admin, authz.Viewer); !errors.As(err, &qe) || qe.Live != 3 || qe.Limit != 3 ||
		qe.Owner != "token:"+hex.EncodeToString(admin.TokenID) || !strings.Contains(err.Error(), TokensQuotaSetting) {
		t.Fatalf("a 4th token of the owner: %v, want a *QuotaError naming %s", err, TokensQuotaSetting)
	}
	if _, err := iss.InviteToken(ctx, admin, authz.Viewer, "1h", nil); !errors.As(err, &qe) {
		t.Fatalf("a 4th token, an invite: %v, want a *QuotaError", err)
	}
	// The tokens boot's login tokens make belong to each of them: a new owner.
	other, err := iss.LoginToken(ctx, Caller{TokenID: []byte("another admin"), Role: authz.Admin}, authz.Viewer)
	if err != nil || other == "" {
		t.Fatalf("another owner's token: %v", err)
	}
	time.Sleep(1100 * time.Millisecond) // the invite (1s) expires: memKeys counts by the wall clock, as Postgres does
	if _, err := iss.LoginToken(ctx, admin, authz.Viewer); err != nil {
		t.Fatalf("after the invite expired: %v", err)
	}
}
