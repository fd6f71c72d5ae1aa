package launcher

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/events"
)

func TestNATSPasswordsAreKeptPrivateAndStable(t *testing.T) {
	home := t.TempDir()
	first, err := natsUsers(home)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != len(events.Suite()) {
		t.Fatalf("%d users, want one per suite user (%d)", len(first), len(events.Suite()))
	}
	seen := map[string]bool{}
	for _, u := range first {
		info, err := os.Stat(filepath.Join(home, NATSUsersDir, u.Name))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s's password file has mode %v, want 0600", u.Name, info.Mode().Perm())
		}
		if len(u.Password) < 40 || seen[u.Password] {
			t.Errorf("%s's password is short or shared", u.Name)
		}
		seen[u.Password] = true
	}
	again, err := natsUsers(home)
	if err != nil {
		t.Fatal(err)
	}
	for i := range first {
		if again[i].Password != first[i].Password {
			t.Errorf("%s's password changed across runs", first[i].Name)
		}
	}
}

// TestServicesConnectAsTheirUsers starts the embedded NATS as `make up` does and connects
// with exactly the settings ChildEnv gives each binary, as its config loads them.
func TestServicesConnectAsTheirUsers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	home := t.TempDir()
	b, err := startBus(Config{Home: home}, func(string, ...any) {}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.stop()
	infra := Infra{NATSURL: b.url, NATSUsers: b.usersDir}

	if nc, err := nats.Connect(b.url, nats.Timeout(3*time.Second)); err == nil {
		nc.Close()
		t.Fatal("the embedded NATS accepted a client without credentials")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("anonymous client: %v, want an authorization violation", err)
	}

	connect := func(binary string) jetstream.JetStream {
		t.Helper()
		env := ChildEnv(Config{Home: home, Environ: []string{"PLINTH_NATS_USER=auth"}}, Placement{Spec: Spec{Binary: binary}}, nil, infra, false)
		var n config.NATS
		if err := config.Load(&n, nil, env); err != nil {
			t.Fatal(err)
		}
		if n.NATSUser != binary {
			t.Fatalf("%s connects as %q", binary, n.NATSUser)
		}
		pw, err := n.NATSPassword()
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(n.NATSURL, nats.UserInfo(n.NATSUser, pw), nats.CustomInboxPrefix(events.InboxPrefix(n.NATSUser)))
		if err != nil {
			t.Fatalf("%s: %v", binary, err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	auth, vagrant := connect("auth"), connect("vagrant-server")
	s := events.StreamOf(&eventsv1.TokenRevoked{})
	if _, err := events.EnsureStream(ctx, auth, s.Name, s.Subjects, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	subject := events.SubjectOf(&eventsv1.TokenRevoked{})
	if _, err := auth.Publish(ctx, subject, []byte("x")); err != nil {
		t.Fatalf("auth cannot publish %s: %v", subject, err)
	}
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	if _, err := vagrant.Publish(short, subject, []byte("forged")); err == nil {
		t.Fatalf("vagrant-server published %s", subject)
	}
	if env := natsUserEnv("vagrant-runner", b.usersDir); env != nil {
		t.Errorf("vagrant-runner, which uses no NATS, gets %v", env)
	}
}
