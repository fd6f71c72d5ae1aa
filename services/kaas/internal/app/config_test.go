package app_test

import (
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/services/kaas/internal/app"
)

// TestQuotaSettings: the per-user quotas default to 10 clusters and 50 machines, 0 turns
// one off, and a negative one is a configuration error naming its variable.
func TestQuotaSettings(t *testing.T) {
	load := func(environ ...string) (app.Config, error) {
		cfg := app.Defaults()
		environ = append(environ, "PLINTH_DATABASE_URL=postgres://x/y", "PLINTH_NATS_URL=nats://x", "PLINTH_KAAS_PROVIDER=vagrant",
			"PLINTH_KAAS_VAGRANT_ADDR=127.0.0.1:1", "PLINTH_KAAS_VAGRANT_TOKEN=t", "PLINTH_KAAS_SECRET_KEY="+secretKey)
		if err := config.Load(&cfg, nil, environ); err != nil {
			t.Fatal(err)
		}
		return cfg, cfg.Validate()
	}
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := cfg.Rules(); r.Quota.MaxClusters != 10 || r.Quota.MaxMachines != 50 {
		t.Fatalf("default quota %+v; want 10 clusters, 50 machines", r.Quota)
	}
	cfg, err = load("PLINTH_KAAS_MAX_CLUSTERS_PER_USER=0", "PLINTH_KAAS_MAX_MACHINES_PER_USER=0")
	if r, _ := cfg.Rules(); err != nil || r.Quota.MaxClusters != 0 || r.Quota.MaxMachines != 0 {
		t.Fatalf("no limits: %+v %v", r.Quota, err)
	}
	for _, name := range []string{"PLINTH_KAAS_MAX_CLUSTERS_PER_USER", "PLINTH_KAAS_MAX_MACHINES_PER_USER"} {
		if _, err := load(name + "=-1"); err == nil || !strings.Contains(err.Error(), name+": is -1") {
			t.Errorf("%s=-1: %v; want an error naming it", name, err)
		}
	}
}
