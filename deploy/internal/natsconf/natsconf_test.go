package natsconf

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/plinth-dev/plinth/libs/platform/events"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestGeneratedFilesAreFresh fails when events.Suite changed and the committed files did not.
func TestGeneratedFilesAreFresh(t *testing.T) {
	for path := range Files {
		want, err := Render(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(repoRoot(t), path))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s is stale: run `make generate-deploy`", path)
		}
	}
}

// loadConfig parses the committed file with nats-server's own parser, beside a passwords.conf
// giving each user the password "pw-<user>".
func loadConfig(t *testing.T, path string) *server.Options {
	t.Helper()
	dir := t.TempDir()
	text, err := os.ReadFile(filepath.Join(repoRoot(t), path))
	if err != nil {
		t.Fatal(err)
	}
	var pw strings.Builder
	for _, u := range events.SuiteUsers() {
		pw.WriteString(PasswordVar(u) + `: "pw-` + u + "\"\n")
	}
	if err := os.WriteFile(filepath.Join(dir, PasswordsFile), []byte(pw.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, text, 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return o
}

// TestConfigsGrantWhatSuiteGrants reads each file as nats-server does and compares every
// user's password and permissions with events.Suite.
func TestConfigsGrantWhatSuiteGrants(t *testing.T) {
	for path := range Files {
		o := loadConfig(t, path)
		if len(o.Users) != len(events.Suite()) {
			t.Fatalf("%s: %d users, want %d", path, len(o.Users), len(events.Suite()))
		}
		for i, a := range events.Suite() {
			u := o.Users[i]
			if u.Username != a.User || u.Password != "pw-"+a.User {
				t.Errorf("%s: user %d is %s/%s, want %s with its password variable", path, i, u.Username, u.Password, a.User)
				continue
			}
			if u.Permissions == nil || u.Permissions.Publish == nil || u.Permissions.Subscribe == nil ||
				!slices.Equal(u.Permissions.Publish.Allow, a.Publish) || !slices.Equal(u.Permissions.Subscribe.Allow, a.Subscribe) ||
				len(u.Permissions.Publish.Deny) > 0 || len(u.Permissions.Subscribe.Deny) > 0 {
				t.Errorf("%s: %s's permissions %+v differ from events.Suite's %+v", path, a.User, u.Permissions, a)
			}
		}
	}
}

// TestComposeConfigRunsAServerThatRefusesForgery starts nats-server from the compose file.
func TestComposeConfigRunsAServerThatRefusesForgery(t *testing.T) {
	o := loadConfig(t, "deploy/docker/nats/plinth.conf")
	o.Host, o.Port, o.NoSigs, o.NoLog = "127.0.0.1", server.RANDOM_PORT, true, true
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("not ready")
	}
	if nc, err := nats.Connect(s.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("a client without credentials was accepted")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("anonymous: %v", err)
	}
	refused := make(chan error, 1)
	vagrant, err := nats.Connect(s.ClientURL(), nats.UserInfo("vagrant-server", "pw-vagrant-server"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refused <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer vagrant.Close()
	auth, err := nats.Connect(s.ClientURL(), nats.UserInfo("auth", "pw-auth"))
	if err != nil {
		t.Fatal(err)
	}
	defer auth.Close()
	_ = vagrant.Publish("plinth.auth.token.revoked", []byte("forged"))
	_ = vagrant.Flush()
	select {
	case err := <-refused:
		if !strings.Contains(err.Error(), `Permissions Violation for Publish to "plinth.auth.token.revoked"`) {
			t.Fatalf("refusal %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("vagrant-server's publish on plinth.auth.token.revoked was not refused")
	}
	if err := auth.Publish("plinth.auth.token.revoked", []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if err := auth.Flush(); err != nil || auth.LastError() != nil {
		t.Fatalf("auth's publish: %v %v", err, auth.LastError())
	}
}
