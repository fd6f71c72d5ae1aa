package runner_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner"
)

func TestConfigDefaultsAndValidation(t *testing.T) {
	var cfg runner.Config
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
	cfg = runner.Config{}
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

func TestAdminEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := runner.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	st := runner.Status{ID: "r1", Problem: "vagrant-server unreachable: connection refused"}
	a, err := runner.ListenAdmin("127.0.0.1:0", reg, func() runner.Status { return st })
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = a.Serve() }()
	defer a.Shutdown(context.Background())
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + a.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/readyz"); code != 200 || !strings.Contains(body, "not registered: vagrant-server unreachable") {
		t.Errorf("/readyz while unregistered: %d %q; want 200 saying why", code, body)
	}
	st = runner.Status{ID: "r1", Registered: true, JobID: "J9"}
	if code, body := get("/readyz"); code != 200 || !strings.Contains(body, "registered with vagrant-server") || !strings.Contains(body, "J9") {
		t.Errorf("/readyz while registered: %d %q", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "plinth_vagrant_runner_registered") {
		t.Errorf("/metrics: %d, lacks plinth_vagrant_runner_registered", code)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	a.Drain()
	if code, _ := get("/readyz"); code != 503 {
		t.Errorf("/readyz while draining: %d, want 503", code)
	}
}
