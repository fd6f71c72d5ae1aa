package app

import (
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/services/gateway/routes"
)

func TestConfigValidate(t *testing.T) {
	cfg := Defaults()
	err := config.Load(&cfg, nil, []string{
		"PLINTH_GATEWAY_BACKEND_STATS=stats", "PLINTH_GATEWAY_BACKEND_LVMD_AGENT=unix://relative.sock",
		"PLINTH_GATEWAY_UNARY_TIMEOUT=-1s", "PLINTH_GATEWAY_TOKEN_CACHE_TTL=1m",
	})
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	for _, want := range []string{"PLINTH_GATEWAY_BACKEND_STATS", "PLINTH_GATEWAY_BACKEND_LVMD_AGENT",
		"PLINTH_GATEWAY_UNARY_TIMEOUT", "PLINTH_GATEWAY_TOKEN_CACHE_TTL"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	cfg = Defaults()
	if err := config.Load(&cfg, nil, []string{"PLINTH_GATEWAY_BACKEND_AUTH=127.0.0.1:7001",
		"PLINTH_GATEWAY_BACKEND_CNPGI_PLUGIN=unix:///run/plinth/plugins/x"}); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.GRPCAddr != "127.0.0.1:8080" || cfg.AdminAddr != "127.0.0.1:8180" || len(cfg.Backends()) != 2 {
		t.Fatalf("defaults: %+v", cfg)
	}
}

// TestBackendEnvFollowsTheLaunchersRule: deploy/internal/launcher names each backend's
// variable PLINTH_GATEWAY_BACKEND_<NAME> (upper case, dashes as underscores); every backend
// of the route table must have exactly that variable here.
func TestBackendEnvFollowsTheLaunchersRule(t *testing.T) {
	for _, b := range routes.Backends() {
		want := "PLINTH_GATEWAY_BACKEND_" + strings.ToUpper(strings.ReplaceAll(b, "-", "_"))
		if got := BackendEnv(b); got != want {
			t.Errorf("%s: %q, want %q", b, got, want)
		}
		cfg := Defaults()
		if err := config.Load(&cfg, nil, []string{want + "=127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
		if cfg.Backends()[b] != "127.0.0.1:1" {
			t.Errorf("%s does not configure %s", want, b)
		}
	}
}
