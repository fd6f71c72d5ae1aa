package runner_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner"
)

func TestConfigDefaultsAndValidation(t *testing.T) {
	cfg := runner.Defaults()
	if err := config.Load(&cfg, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if cfg.ServerAddr != "127.0.0.1:7004" || cfg.AdminAddr != "127.0.0.1:7107" {
		t.Errorf("defaults: server %s admin %s", cfg.ServerAddr, cfg.AdminAddr)
	}
	bad := []string{"PLINTH_VAGRANT_SERVER_ADDR=nowhere", "PLINTH_VAGRANT_NETNS_SUBNET=10.213.0.0", "PLINTH_LOG_LEVEL=loud",
		"PLINTH_VAGRANT_RUNNER_ID=has space", "PLINTH_ADMIN_ADDR=7107"}
	cfg = runner.Defaults()
	if err := config.Load(&cfg, nil, bad); err != nil {
		t.Fatal(err)
	}
	err := cfg.Validate()
	for _, name := range []string{"PLINTH_VAGRANT_SERVER_ADDR", "PLINTH_VAGRANT_NETNS_SUBNET", "PLINTH_LOG_LEVEL", "PLINTH_VAGRANT_RUNNER_ID", "PLINTH_ADMIN_ADDR"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Validate: %v; want it to name %s", err, name)
		}
	}
	// The token is a secret: it never appears in the printed config.
	cfg = runner.Config{}
	_ = config.Load(&cfg, nil, []string{"PLINTH_VAGRANT_TOKEN=s3cr3t-token"})
	if s := config.String(&cfg); strings.Contains(s, "s3cr3t-token") {
		t.Errorf("printed config shows the token: %s", s)
	}
}

func TestLoadIDPersists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	first, err := runner.LoadID("", dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := runner.LoadID("", dir)
	if err != nil || again != first {
		t.Errorf("second LoadID = %q, %v; want the persisted %q", again, err, first)
	}
	if id, _ := runner.LoadID("configured", dir); id != "configured" {
		t.Errorf("configured id ignored: %q", id)
	}
	if err := os.WriteFile(filepath.Join(dir, "id"), []byte("not an id!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.LoadID("", dir); err == nil {
		t.Error("a corrupt id file was accepted")
	}
}

func TestTokenSource(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if _, err := runner.TokenSource("", file)(); !errors.Is(err, runner.ErrNoToken) || !strings.Contains(err.Error(), "GenerateLoginToken") {
		t.Errorf("missing file: %v, want ErrNoToken saying how to get one", err)
	}
	_ = os.WriteFile(file, []byte("  from-file\n"), 0o600)
	if tok, err := runner.TokenSource("", file)(); tok != "from-file" || err != nil {
		t.Errorf("file token = %q, %v", tok, err)
	}
	if tok, _ := runner.TokenSource("from-env", file)(); tok != "from-env" {
		t.Errorf("configured token does not win: %q", tok)
	}
}

// TestAdminEndpoints runs the assembled runner against a server that is not there: it is
// healthy and ready (a restart would not bring the server back) and says why it is not
// registered.
func TestAdminEndpoints(t *testing.T) {
	cfg := runner.Defaults()
	env := []string{"PLINTH_ADMIN_ADDR=127.0.0.1:0", "PLINTH_VAGRANT_SERVER_ADDR=127.0.0.1:1",
		"PLINTH_VAGRANT_RUNNER_STATE_DIR=" + t.TempDir(), "PLINTH_VAGRANT_TOKEN=t"}
	if err := config.Load(&cfg, nil, env); err != nil {
		t.Fatal(err)
	}
	s, err := runner.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + s.AdminAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor(t, "/readyz to say why the runner is not registered", func() bool {
		code, body := get("/readyz")
		return code == 200 && strings.Contains(body, "not registered: ")
	})
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "plinth_vagrant_runner_registered") {
		t.Errorf("/metrics: %d, lacks plinth_vagrant_runner_registered", code)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	text := runner.StatusText(runner.Status{ID: "r1", Registered: true, JobID: "J9"})
	if !strings.Contains(text, "registered with vagrant-server") || !strings.Contains(text, "J9") {
		t.Errorf("status while registered: %q", text)
	}
}
