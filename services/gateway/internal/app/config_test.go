package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/mtls"
	"github.com/plinth-dev/plinth/libs/platform/mtls/mtlstest"
	"github.com/plinth-dev/plinth/services/gateway/routes"
)

func TestConfigValidate(t *testing.T) {
	cfg := Defaults()
	err := config.Load(&cfg, nil, []string{
		"PLINTH_GATEWAY_BACKEND_STATS=stats", "PLINTH_GATEWAY_BACKEND_LVMD_AGENT=unix://relative.sock",
		"PLINTH_GATEWAY_UNARY_TIMEOUT=-1s", "PLINTH_GATEWAY_TOKEN_CACHE_TTL=1m",
		"PLINTH_GATEWAY_IDLE_TIMEOUT=0s", "PLINTH_GATEWAY_MAX_CONNS=0", "PLINTH_GATEWAY_MAX_CONNS_PER_CLIENT=1",
	})
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	for _, want := range []string{"PLINTH_GATEWAY_BACKEND_STATS", "PLINTH_GATEWAY_BACKEND_LVMD_AGENT",
		"PLINTH_GATEWAY_UNARY_TIMEOUT", "PLINTH_GATEWAY_TOKEN_CACHE_TTL", "PLINTH_GATEWAY_IDLE_TIMEOUT",
		"PLINTH_GATEWAY_MAX_CONNS", "PLINTH_GATEWAY_MAX_CONNS_PER_CLIENT"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	cfg = Defaults()
	if err := config.Load(&cfg, nil, []string{"PLINTH_AUTH_ADDR=127.0.0.1:7001",
		"PLINTH_GATEWAY_BACKEND_CNPGI_PLUGIN=unix:///run/plinth/plugins/x"}); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.GRPCAddr != "127.0.0.1:8080" || cfg.AdminAddr != "127.0.0.1:8180" || len(cfg.Backends()) != 2 ||
		cfg.IdleTimeout != 2*time.Minute || cfg.MaxConnsPerClient != 64 || cfg.MaxConns != 2048 {
		t.Fatalf("defaults: %+v", cfg)
	}
}

// TestBackendEnvFollowsTheLaunchersRule: deploy/internal/launcher names each backend's
// variable PLINTH_GATEWAY_BACKEND_<NAME> (upper case, dashes as underscores), auth's
// PLINTH_AUTH_ADDR as in every binary that checks tokens; every backend of the route table
// must have exactly that variable here, and the former name of auth's is refused.
func TestBackendEnvFollowsTheLaunchersRule(t *testing.T) {
	for _, b := range routes.Backends() {
		want := "PLINTH_GATEWAY_BACKEND_" + strings.ToUpper(strings.ReplaceAll(b, "-", "_"))
		if b == routes.Auth {
			want = "PLINTH_AUTH_ADDR"
		}
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
	cfg := Defaults()
	if err := config.Load(&cfg, nil, []string{"PLINTH_GATEWAY_BACKEND_AUTH=auth:7011"}); err == nil ||
		!strings.Contains(err.Error(), "renamed PLINTH_AUTH_ADDR") {
		t.Errorf("the former name of auth's address: Load = %v, want the rename named", err)
	}
}

func TestConfigKoor(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want string // "" valid
	}{
		{nil, ""}, // off by default
		{[]string{"PLINTH_GATEWAY_KOOR_ADDR=127.0.0.1:8282", "PLINTH_GATEWAY_KOOR_UI_DIR=/srv/koor"}, ""},
		{[]string{"PLINTH_GATEWAY_KOOR_ADDR=127.0.0.1:8282"}, "PLINTH_GATEWAY_KOOR_UI_DIR"},
		{[]string{"PLINTH_GATEWAY_KOOR_UI_DIR=/srv/koor"}, "PLINTH_GATEWAY_KOOR_ADDR"},
		{[]string{"PLINTH_GATEWAY_KOOR_ADDR=8282", "PLINTH_GATEWAY_KOOR_UI_DIR=/srv/koor"}, "PLINTH_GATEWAY_KOOR_ADDR"},
	} {
		cfg := Defaults()
		if err := config.Load(&cfg, nil, tt.env); err != nil {
			t.Fatal(err)
		}
		err := cfg.Validate()
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%v: %v, want an error naming %q", tt.env, err, tt.want)
		}
	}
}

func TestConfigBackendTLS(t *testing.T) {
	dir := t.TempDir()
	mtlstest.Write(t, filepath.Join(dir, "lvmd-agent"), "lvmd-agent")
	mtlstest.Write(t, filepath.Join(dir, "kaas"), "kaas")
	mtlstest.Write(t, filepath.Join(dir, "cnpgi-plugin"), "cnpgi-plugin")
	if err := os.Remove(filepath.Join(dir, "cnpgi-plugin", "server.crt")); err != nil {
		t.Fatal(err)
	}
	load := func(env ...string) Config {
		cfg := Defaults()
		if err := config.Load(&cfg, nil, env); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := load("PLINTH_GATEWAY_BACKEND_TLS_DIR="+dir,
		"PLINTH_GATEWAY_BACKEND_LVMD_AGENT=lvmd-agent:7443", // a pair: mutual TLS
		"PLINTH_GATEWAY_BACKEND_KAAS=unix:///run/kaas.sock", // a socket: plaintext, pair or not
		"PLINTH_GATEWAY_BACKEND_STATS=stats:7002")           // no pair: plaintext
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tlsFiles, _ := cfg.BackendTLS()
	want := mtls.ClientFiles{Cert: filepath.Join(dir, "lvmd-agent", "client.crt"), Key: filepath.Join(dir, "lvmd-agent", "client.key"),
		ServerCA: filepath.Join(dir, "lvmd-agent", "server.crt"), ServerName: "lvmd-agent"}
	if len(tlsFiles) != 1 || tlsFiles["lvmd-agent"] != want {
		t.Fatalf("backends with mutual TLS: %+v", tlsFiles)
	}
	cfg = load("PLINTH_GATEWAY_BACKEND_TLS_DIR="+dir, "PLINTH_GATEWAY_BACKEND_CNPGI_PLUGIN=cnpgi-plugin:9090")
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "PLINTH_GATEWAY_BACKEND_TLS_DIR: cnpgi-plugin") ||
		!strings.Contains(err.Error(), filepath.Join(dir, "cnpgi-plugin", "server.crt")) {
		t.Fatalf("an incomplete pair: %v, want an error naming the missing file", err)
	}
	cfg = load("PLINTH_GATEWAY_BACKEND_TLS_DIR="+filepath.Join(dir, "nope"), "PLINTH_GATEWAY_BACKEND_STATS=stats:7002")
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "PLINTH_GATEWAY_BACKEND_TLS_DIR") {
		t.Fatalf("a missing directory: %v", err)
	}
}
