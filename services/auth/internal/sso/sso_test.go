package sso

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// TestRoleOf: the strongest mapped value wins; a string claim counts as one value; nothing
// mapped is the default role, or a refusal without one.
func TestRoleOf(t *testing.T) {
	p := &Provider{RoleClaim: "groups", Roles: map[string]authz.Role{"admins": authz.Admin, "ops": authz.Operator, "staff": authz.Viewer}}
	for _, tc := range []struct {
		claims map[string]any
		def    authz.Role
		want   authz.Role
		ok     bool
	}{
		{map[string]any{"groups": []any{"staff", "ops"}}, "", authz.Operator, true},
		{map[string]any{"groups": []any{"admins", "staff", 7}}, "", authz.Admin, true},
		{map[string]any{"groups": "ops"}, "", authz.Operator, true},
		{map[string]any{"groups": []any{"visitors"}}, "", "", false},
		{map[string]any{"groups": []any{"visitors"}}, authz.Viewer, authz.Viewer, true},
		{map[string]any{"roles": []any{"admins"}}, "", "", false}, // another claim maps nothing
		{map[string]any{"groups": map[string]any{"admins": true}}, "", "", false},
	} {
		p.DefaultRole = tc.def
		if got, ok := p.RoleOf(tc.claims); got != tc.want || ok != tc.ok {
			t.Errorf("RoleOf(%v) default %q = %q %v, want %q %v", tc.claims, tc.def, got, ok, tc.want, tc.ok)
		}
	}
}

// TestUsernameOf: a valid Plinth username from the claims, whatever they hold.
func TestUsernameOf(t *testing.T) {
	p := &Provider{Name: "dex", UsernameClaim: "preferred_username"}
	for claims, want := range map[string]string{
		`alice`:                                 "alice",
		`Ann Lee <ann@x>`:                       "Ann-Lee-ann-x",
		`a`:                                     "dex-user",
		`a-very-long-preferred-username-indeed`: "a-very-long-preferred-us",
		``:                                      "bob", // from the email
	} {
		c := map[string]any{"preferred_username": claims, "email": "bob@example.test"}
		if got := p.UsernameOf(c); got != want {
			t.Errorf("UsernameOf(%q) = %q, want %q", claims, got, want)
		}
	}
}

// TestLoadProviders: a good file loads (secret trimmed, openid added); every mistake names
// the provider and the field, and never the secret.
func TestLoadProviders(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("s3cr3t-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(doc string) string {
		f := filepath.Join(dir, "p.json")
		if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	good := `{"providers":[{"name":"dex","issuer":"https://dex.example","client_id":"plinth","client_secret_file":"` + secret +
		`","scopes":["email"],"redirect_urls":["https://p.example/auth/oidc/callback"],"roles":{"a":"admin"}}]}`
	ps, err := LoadProviders(write(good))
	if err != nil || len(ps) != 1 || ps[0].clientSecret != "s3cr3t-value" || ps[0].Label != "dex" || ps[0].Scopes[0] != "openid" || ps[0].RoleClaim != "groups" {
		t.Fatalf("LoadProviders: %+v %v", ps, err)
	}
	for _, tc := range []struct{ doc, want string }{
		{`{"providers":[]}`, "no providers"},
		{`{"providers":[{"name":"dex"}], "extra":1}`, `unknown field "extra"`},
		{strings.Replace(good, `"dex"`, `"Dex!"`, 1), "name: 1 to 32 characters"},
		{strings.Replace(good, `https://dex.example`, `ftp://dex`, 1), "issuer: an http(s) URL"},
		{strings.Replace(good, secret, empty, 1), "client_secret_file: " + empty + " is empty"},
		{strings.Replace(good, secret, filepath.Join(dir, "none"), 1), "client_secret_file: open"},
		{strings.Replace(good, `"https://p.example/auth/oidc/callback"`, `"/relative"`, 1), "redirect_urls:"},
		{strings.Replace(good, `"a":"admin"`, `"a":"root"`, 1), `roles["a"]`},
		{strings.Replace(good, `"roles":{"a":"admin"}`, `"roles":{}`, 1), "at least one, or nobody could sign in"},
		{strings.Replace(good, `[{`, `[{"name":"dex","issuer":"https://dex.example","client_id":"c","client_secret_file":"`+secret+`","redirect_urls":["https://x.example/cb"],"default_role":"viewer"},{`, 1), `name "dex" twice`},
	} {
		_, err := LoadProviders(write(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t-value") {
			t.Errorf("the error quotes the secret: %v", err)
		}
	}
}
