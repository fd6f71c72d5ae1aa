package tokens

import (
	"context"
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

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens/keystoretest"
)

// memKeys is an in-memory KeyStore for the rules; it and the Postgres one pass keystoretest.
type memKeys struct {
	mu   sync.Mutex
	keys map[string][]byte
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
	iss := NewIssuer(&memKeys{}, func() time.Time { return clock })

	if _, err := iss.LoginToken(ctx); err == nil {
		t.Fatal("a login token was issued before bootstrap")
	}
	boot, err := iss.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := iss.Bootstrap(ctx); !errors.Is(err, ErrBootstrapped) {
		t.Fatalf("second bootstrap: %v", err)
	}
	if err := iss.Authenticate(ctx, boot, "UpsertBasis"); err != nil {
		t.Fatalf("bootstrap token refused: %v", err)
	}
	invite, err := iss.InviteToken(ctx, "1h", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := iss.Authenticate(ctx, invite, "UpsertBasis"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an invite must not authenticate calls: %v", err)
	}
	if _, err := iss.ConvertInvite(ctx, boot); !errors.Is(err, ErrInvalid) {
		t.Fatalf("converting a login token: %v", err)
	}
	login, err := iss.ConvertInvite(ctx, invite)
	if err != nil || iss.Authenticate(ctx, login, "ListBasis") != nil {
		t.Fatalf("converted login token: %v", err)
	}
	clock = clock.Add(61 * time.Minute)
	if _, err := iss.ConvertInvite(ctx, invite); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired invite: %v", err)
	}
	if err := iss.Authenticate(ctx, login, "ListBasis"); err != nil {
		t.Fatalf("login tokens do not expire (upstream): %v", err)
	}
	for _, d := range []string{"", "-1h", "0s", "tomorrow"} {
		if _, err := iss.InviteToken(ctx, d, nil); !errors.Is(err, ErrBadDuration) {
			t.Errorf("InviteToken(%q) = %v", d, err)
		}
	}
	epInvite, _ := iss.InviteToken(ctx, "1h", &vagrant.Token_Entrypoint{DeploymentId: "d1"})
	epLogin, err := iss.ConvertInvite(ctx, epInvite)
	if err != nil {
		t.Fatal(err)
	}
	if err := iss.Authenticate(ctx, epLogin, "UpsertBasis"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("entrypoint token on a normal call: %v", err)
	}
	if err := iss.Authenticate(ctx, epLogin, "EntrypointConfig"); err != nil {
		t.Fatalf("entrypoint token on an entrypoint call: %v", err)
	}
}

func timestampOf(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

// Accepted tokens are remembered, but a remembered token with an expiry still expires.
func TestRememberedLoginTokenStillExpires(t *testing.T) {
	ctx := context.Background()
	clock := time.Now()
	keys := &memKeys{}
	iss := NewIssuer(keys, func() time.Time { return clock })
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
		if err := iss.Authenticate(ctx, tok, "ListBasis"); err != nil {
			t.Fatalf("login token with an expiry ahead refused: %v", err)
		}
	}
	clock = clock.Add(2 * time.Minute)
	if err := iss.Authenticate(ctx, tok, "ListBasis"); !errors.Is(err, ErrExpired) {
		t.Fatalf("remembered token past its expiry: %v, want ErrExpired", err)
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
