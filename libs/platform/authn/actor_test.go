package authn

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"
)

func TestActor(t *testing.T) {
	withMD := func(kv ...string) context.Context {
		return metadata.NewIncomingContext(context.Background(), metadata.Pairs(kv...))
	}
	const id = "0b5e8a6e-8c1b-4f5e-9a57-3f1d2c4b5a69"
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		id, user string
	}{
		{"no caller", context.Background(), "", ""},
		{"verified account", WithAccount(context.Background(), Account{ID: id, Name: "ops"}), id, "ops"},
		{"account wins over headers", WithAccount(withMD("plinth-account-id", "other", "plinth-account-name", "eve"), Account{ID: id, Name: "ops"}), id, "ops"},
		{"gateway headers", withMD("plinth-account-id", id, "plinth-account-name", "ops"), id, "ops"},
		{"id without name", withMD("plinth-account-id", id), id, ""},
		{"name without id", withMD("plinth-account-name", "ops"), "", ""},
		{"repeated id is not the gateway's", withMD("plinth-account-id", id, "plinth-account-id", "x"), "", ""},
		{"overlong id", withMD("plinth-account-id", strings.Repeat("a", 65)), "", ""},
		{"control characters", withMD("plinth-account-id", id, "plinth-account-name", "ops\nadmin"), id, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Actor(tc.ctx)
			if a.GetUserId() != tc.id || a.GetUsername() != tc.user {
				t.Fatalf("Actor = %v, want id %q name %q", a, tc.id, tc.user)
			}
			if tc.id == "" && a != nil {
				t.Fatalf("Actor = %v, want nil", a)
			}
		})
	}
}
