package tokens

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mr-tron/base58"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// fuzzSeeds are tokens as clients send them: well-formed ones signed with key, and the
// malformed shapes an attacker starts from.
func fuzzSeeds(f *testing.F, key []byte) {
	login, err := Sign(DefaultKeyID, key, nil, &vagrant.Token{Login: true, User: DefaultUser, TokenId: []byte("0123456789abcdef")})
	if err != nil {
		f.Fatal(err)
	}
	invite, err := Sign(DefaultKeyID, key, map[string]string{"note": "x"}, &vagrant.Token{Invite: true,
		ValidUntil: timestampOf(time.Unix(2_000_000_000, 0)), Entrypoint: &vagrant.Token_Entrypoint{DeploymentId: "d1"}})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{login, invite, login[:len(login)/2], login + "1", "", "0OIl", Magic,
		base58.Encode([]byte(Magic)), base58.Encode([]byte(Magic + "\xff\xff\xff")), "Bearer " + login,
		strings.Repeat("z", MaxLen), strings.Repeat("z", MaxLen+1)} {
		f.Add(s)
	}
}

// Parse and Verify of anything a client sends: an error that is ErrInvalid or ErrExpired,
// or a transport that verifies — never a panic, never another error.
func FuzzParseAndVerify(f *testing.F) {
	key := make([]byte, KeySize)
	fuzzSeeds(f, key)
	f.Fuzz(func(t *testing.T, token string) {
		tt, err := Parse(token)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) = %v, want ErrInvalid", token, err)
			}
			return
		}
		if len(token) > MaxLen {
			t.Fatalf("Parse accepted a %d-byte token", len(token))
		}
		if _, err := Verify(tt, key, time.Unix(1_900_000_000, 0)); err != nil && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrExpired) {
			t.Fatalf("Verify(%q) = %v", token, err)
		}
	})
}

// Authenticate of anything a client sends: accepted only when it is a login token signed
// with the server's key; otherwise ErrInvalid or ErrExpired.
func FuzzAuthenticate(f *testing.F) {
	keys := &memKeys{}
	iss := NewIssuer(keys, keys, func() time.Time { return time.Unix(1_900_000_000, 0) })
	if _, err := iss.Bootstrap(context.Background()); err != nil {
		f.Fatal(err)
	}
	key, err := keys.Key(context.Background(), DefaultKeyID)
	if err != nil {
		f.Fatal(err)
	}
	fuzzSeeds(f, key)
	f.Fuzz(func(t *testing.T, token string) {
		err := check(iss, context.Background(), token, "ListBasis")
		if err == nil {
			tt, perr := Parse(token)
			if perr != nil {
				t.Fatalf("Authenticate accepted %q, which does not parse: %v", token, perr)
			}
			body, verr := Verify(tt, key, time.Unix(1_900_000_000, 0))
			if verr != nil || !body.GetLogin() {
				t.Fatalf("Authenticate accepted %q: %v %v", token, body, verr)
			}
			return
		}
		if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrExpired) {
			t.Fatalf("Authenticate(%q) = %v", token, err)
		}
	})
}
