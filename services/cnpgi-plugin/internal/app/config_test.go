package app

import (
	cnpgiplugin "github.com/plinth-dev/plinth/services/cnpgi-plugin/plugin"

	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/config"
)

func load(t *testing.T, environ ...string) (Config, error) {
	t.Helper()
	cfg := Defaults()
	if err := config.Load(&cfg, nil, environ); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Resolve(); err != nil {
		t.Fatal(err)
	}
	return cfg, cfg.Validate()
}

// TestDefaultsFollowTheLauncher: with only what `make up` sets, the socket is
// <plugin dir>/<plugin name> and the local store and spool sit beside the plugin directory.
func TestDefaultsFollowTheLauncher(t *testing.T) {
	home := t.TempDir()
	cfg, err := load(t, "PLINTH_DATABASE_URL=postgres://u@h/db", "PLINTH_CNPGI_PLUGIN_DIR="+filepath.Join(home, "plugins"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GRPCAddr != "unix://"+filepath.Join(home, "plugins", cnpgiplugin.DefaultName) || cfg.AdminAddr != "127.0.0.1:7106" {
		t.Fatalf("addresses %s %s", cfg.GRPCAddr, cfg.AdminAddr)
	}
	if cfg.DefaultStoreDir != filepath.Join(home, "cnpgi-store") || cfg.SpoolDir != filepath.Join(home, "cnpgi-spool") {
		t.Fatalf("dirs %s %s", cfg.DefaultStoreDir, cfg.SpoolDir)
	}
	rel, err := load(t, "PLINTH_DATABASE_URL=postgres://u@h/db")
	if err != nil || !filepath.IsAbs(rel.PluginDir) || !strings.HasSuffix(rel.PluginDir, filepath.Join(".plinth", "plugins")) {
		t.Fatalf("relative default: %s %v", rel.PluginDir, err)
	}
}

func TestValidateNamesEveryProblem(t *testing.T) {
	_, err := load(t,
		"PLINTH_CNPGI_PLUGIN_NAME=-bad-", "PLINTH_GRPC_ADDR=unix:///run/plugins/other-name",
		"PLINTH_CNPGI_CONFIG=/nonexistent/cnpgi.yaml", "PLINTH_CNPGI_WAL_TIMEOUT=1ms")
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	for _, want := range []string{"PLINTH_DATABASE_URL", "PLINTH_CNPGI_PLUGIN_NAME", "must be named after the plugin", "PLINTH_CNPGI_CONFIG", "PLINTH_CNPGI_WAL_TIMEOUT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if _, err := load(t, "PLINTH_DATABASE_URL=postgres://u@h/db", "PLINTH_GRPC_ADDR=127.0.0.1:7006"); err != nil {
		t.Fatalf("a TCP address needs no socket name: %v", err)
	}
}

func TestLoadStoresWithoutAFileIsOneLocalStore(t *testing.T) {
	cfg, _ := load(t, "PLINTH_DATABASE_URL=postgres://u@h/db", "PLINTH_CNPGI_PLUGIN_DIR="+filepath.Join(t.TempDir(), "plugins"))
	reg, err := loadStores(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if names := reg.Names(); len(names) != 1 || names[0] != "local" || reg.Default() != "local" {
		t.Fatalf("stores %v default %q", names, reg.Default())
	}
	cfg.ConfigFile = filepath.Join(t.TempDir(), "bad.yaml")
	if _, err := loadStores(cfg, nil); err == nil || !strings.Contains(err.Error(), "PLINTH_CNPGI_CONFIG") {
		t.Fatalf("missing file: %v", err)
	}
}
