package identity

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fastParams keep the tests quick; production parameters are exercised by the benchmark.
func fastParams() HashParams {
	return HashParams{Memory: 8 * 1024, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}
}

func TestPasswordHashRoundTrip(t *testing.T) {
	p := fastParams()
	enc, err := HashPassword("correct horse", p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(enc, "$argon2id$v=19$m=8192,t=1,p=1$") {
		t.Fatalf("unexpected encoding %q", enc)
	}
	if strings.Contains(enc, "correct horse") {
		t.Fatal("hash contains the password")
	}
	ok, rehash, err := VerifyPassword(enc, "correct horse", p)
	if err != nil || !ok || rehash {
		t.Fatalf("verify good password: ok=%v rehash=%v err=%v", ok, rehash, err)
	}
	ok, _, err = VerifyPassword(enc, "correct horsf", p)
	if err != nil || ok {
		t.Fatalf("verify wrong password: ok=%v err=%v", ok, err)
	}
	stronger := p
	stronger.Iterations = 2
	ok, rehash, _ = VerifyPassword(enc, "correct horse", stronger)
	if !ok || !rehash {
		t.Fatalf("raised parameters must ask for a rehash: ok=%v rehash=%v", ok, rehash)
	}
	enc2, _ := HashPassword("correct horse", p)
	if enc2 == enc {
		t.Fatal("two hashes of one password must differ (salt)")
	}
}

func TestVerifyRejectsMalformedHash(t *testing.T) {
	for _, enc := range []string{"", "plain", "$argon2i$v=19$m=8192,t=1,p=1$c2FsdHNhbHRzYWx0c2FsdA$a2V5", "$argon2id$v=18$m=8192,t=1,p=1$c2FsdA$a2V5", "$argon2id$v=19$m=x$c2FsdA$a2V5", "$argon2id$v=19$m=8192,t=1,p=1$!!$a2V5"} {
		if _, _, err := VerifyPassword(enc, "pw", fastParams()); err == nil {
			t.Errorf("VerifyPassword(%q) = nil error", enc)
		} else if enc != "" && strings.Contains(err.Error(), enc) {
			t.Errorf("error leaks the stored hash: %v", err)
		}
	}
}

func TestHashParamsValidate(t *testing.T) {
	if err := DefaultHashParams().Validate(); err != nil {
		t.Fatal(err)
	}
	weak := DefaultHashParams()
	weak.Memory = 1024
	if weak.Validate() == nil {
		t.Fatal("1 MiB accepted")
	}
}

func TestTokens(t *testing.T) {
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if a == b {
		t.Fatal("tokens repeat")
	}
	if !strings.HasPrefix(a, TokenPrefix) || len(a) != len(TokenPrefix)+43 {
		t.Fatalf("token %q: want prefix and 43 base64url chars (256 bits)", a)
	}
	if !LooksLikeToken(a) {
		t.Fatal("own token rejected")
	}
	for _, bad := range []string{"", "plt_", "xyz_" + a[4:], a + "A", a[:len(a)-1], "plt_" + strings.Repeat("!", 43)} {
		if LooksLikeToken(bad) {
			t.Errorf("LooksLikeToken(%q) = true", bad)
		}
	}
	if TokenID(a) == TokenID(b) || len(TokenID(a)) != 64 || strings.Contains(TokenID(a), a) {
		t.Fatal("token ids must be distinct 64-hex digests")
	}
}

func TestValidation(t *testing.T) {
	cases := []struct {
		user, pass string
		field      string
	}{
		{"admin", "secret1", ""},
		{"a-b_C9", "123456", ""},
		{"ab", "secret1", "username"},
		{strings.Repeat("a", 25), "secret1", "username"},
		{"bad name", "secret1", "username"},
		{"bäd", "secret1", "username"},
		{"admin", "12345", "password"},
		{"admin", strings.Repeat("x", 71), "password"},
		{"admin", strings.Repeat("é", 35), ""}, // 70 bytes: allowed
		{"admin", strings.Repeat("é", 36), "password"},
	}
	for _, c := range cases {
		err := ValidateUsername(c.user)
		if err == nil {
			err = ValidatePassword(c.pass)
		}
		var fe *FieldError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("(%q,%q): unexpected %v", c.user, c.pass, err)
		case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field):
			t.Errorf("(%q,%q): want error on %s, got %v", c.user, c.pass, c.field, err)
		}
	}
}

func TestLockoutPolicy(t *testing.T) {
	p := DefaultLockoutPolicy()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		failures int
		ago      time.Duration
		want     time.Duration
	}{
		{4, 0, 0},
		{5, 0, 30 * time.Second},
		{5, 10 * time.Second, 20 * time.Second},
		{5, 31 * time.Second, 0},
		{6, 0, time.Minute},
		{8, 0, 4 * time.Minute},
		{50, 0, time.Hour},
		{50, 25 * time.Hour, 0}, // forgotten
	}
	for _, c := range cases {
		got := p.LockedFor(Counter{Failures: c.failures, LastFailure: now.Add(-c.ago)}, p.PairThreshold, now)
		if got != c.want {
			t.Errorf("failures=%d ago=%v: locked for %v, want %v", c.failures, c.ago, got, c.want)
		}
	}
}

func TestTokenQuotaAdmit(t *testing.T) {
	for _, c := range []struct {
		limit, live int
		refused     bool
	}{
		{0, 1_000_000, false}, // no limit
		{100, 0, false},
		{100, 99, false},
		{100, 100, true},
		{3, 7, true}, // the limit was lowered below what the user holds
	} {
		err := TokenQuota{MaxPerUser: c.limit}.Admit("alice", c.live)
		var qe *TokenQuotaError
		if errors.As(err, &qe) != c.refused {
			t.Errorf("limit %d, %d live: %v, want refused=%v", c.limit, c.live, err, c.refused)
			continue
		}
		if c.refused && (qe.Limit != c.limit || qe.Live != c.live || qe.Username != "alice") {
			t.Errorf("limit %d, %d live: %+v", c.limit, c.live, qe)
		}
	}
}
