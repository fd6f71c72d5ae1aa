package runnerapp_test

import (
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runnerapp"
)

func TestConfigDefaultsAndValidation(t *testing.T) {
	cfg := runnerapp.Defaults()
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
		"PLINTH_VAGRANT_RUNNER_ID=has space", "PLINTH_ADMIN_ADDR=7107", "PLINTH_VAGRANT_RUNNER_JOBS=0",
		"PLINTH_VAGRANT_RUNNER_RESERVED_ID=kaas!", "PLINTH_VAGRANT_RUNNER_RESERVED_JOBS=65", "PLINTH_VAGRANT_NETNS_MEMORY=lots"}
	cfg = runnerapp.Defaults()
	if err := config.Load(&cfg, nil, bad); err != nil {
		t.Fatal(err)
	}
	err := cfg.Validate()
	for _, name := range []string{"PLINTH_VAGRANT_SERVER_ADDR", "PLINTH_VAGRANT_NETNS_SUBNET", "PLINTH_LOG_LEVEL", "PLINTH_VAGRANT_RUNNER_ID", "PLINTH_ADMIN_ADDR",
		"PLINTH_VAGRANT_RUNNER_JOBS", "PLINTH_VAGRANT_RUNNER_RESERVED_ID", "PLINTH_VAGRANT_RUNNER_RESERVED_JOBS", "PLINTH_VAGRANT_NETNS_MEMORY"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Validate: %v; want it to name %s", err, name)
		}
	}
	for _, bad := range []string{"PLINTH_VAGRANT_NETNS_SANDBOX=docker", "PLINTH_VAGRANT_NETNS_CPUS=-1", "PLINTH_VAGRANT_NETNS_PIDS=0"} {
		cfg = runnerapp.Defaults()
		if err := config.Load(&cfg, nil, []string{bad}); err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), strings.Split(bad, "=")[0]) {
			t.Errorf("Validate with %s: %v; want it named", bad, err)
		}
	}
	// The token is a secret: it never appears in the printed config.
	cfg = runnerapp.Config{}
	_ = config.Load(&cfg, nil, []string{"PLINTH_VAGRANT_TOKEN=s3cr3t-token"})
	if s := config.String(&cfg); strings.Contains(s, "s3cr3t-token") {
		t.Errorf("printed config shows the token: %s", s)
	}
}
