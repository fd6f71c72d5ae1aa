package app_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/services/stats/internal/app"
)

func TestConfigValidation(t *testing.T) {
	base := []string{"PLINTH_DATABASE_URL=postgres://db/plinth", "PLINTH_NATS_URL=nats://127.0.0.1:4222", "PLINTH_AUTH_ADDR=127.0.0.1:7001"}
	load := func(environ ...string) (app.Config, error) {
		cfg := app.Defaults()
		if err := config.Load(&cfg, nil, append(append([]string(nil), base...), environ...)); err != nil {
			return cfg, err
		}
		return cfg, cfg.Validate()
	}
	cfg, err := load()
	if err != nil || !cfg.Inventory || cfg.Namespace != "rook-ceph" || cfg.GRPCAddr != "127.0.0.1:7002" || cfg.AdminAddr != "127.0.0.1:7102" {
		t.Fatalf("defaults: %+v %v", cfg, err)
	}
	for _, bad := range [][]string{
		{"PLINTH_STATS_INVENTORY=false"}, // no source at all
		{"PLINTH_STATS_CEPH_URL=ftp://mgr"},
		{"PLINTH_STATS_CEPH_URL=https://mgr:8443"}, // the dashboard without credentials
		{"PLINTH_STATS_KUBECONFIG=/k", "PLINTH_STATS_KUBE_IN_CLUSTER=true"},
		{"PLINTH_STATS_TOKEN_CACHE_TTL=1m"},
		{"PLINTH_STATS_REFRESH_INTERVAL=0s"},
		{"PLINTH_STATS_HEARTBEAT_MISSES=0"},
		{"PLINTH_AUTH_ADDR="},
	} {
		if _, err := load(bad...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	cfg, err = load("PLINTH_STATS_INVENTORY=false", "PLINTH_STATS_CEPH_URL=https://stats:s3cret-pw@mgr:8443")
	if err != nil || cfg.Inventory {
		t.Fatalf("a Ceph-only config: %v", err)
	}
	if printed := config.LogValue(&cfg).String(); strings.Contains(printed, "s3cret-pw") {
		t.Errorf("the dashboard password is printed: %s", printed)
	}
	pwFile := filepath.Join(t.TempDir(), "dashboard.pw")
	if err := os.WriteFile(pwFile, []byte("file-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := load("PLINTH_STATS_CEPH_URL=http://127.0.0.1:7303", "PLINTH_STATS_CEPH_USER=plinth", "PLINTH_STATS_CEPH_PASSWORD_FILE="+pwFile); err != nil {
		t.Errorf("the password from a file: %v", err)
	}
	for _, bad := range [][]string{
		{"PLINTH_STATS_CEPH_PASSWORD_FILE=" + filepath.Join(t.TempDir(), "absent")},
		{"PLINTH_STATS_CEPH_PASSWORD_FILE=" + pwFile, "PLINTH_STATS_CEPH_PASSWORD=x"},
	} {
		_, err := load(append([]string{"PLINTH_STATS_CEPH_URL=http://127.0.0.1:7303", "PLINTH_STATS_CEPH_USER=plinth"}, bad...)...)
		if err == nil || !strings.Contains(err.Error(), "PLINTH_STATS_CEPH_PASSWORD_FILE") {
			t.Errorf("%v: %v, want an error naming PLINTH_STATS_CEPH_PASSWORD_FILE", bad, err)
		}
	}
}

// TestAdminShowsTheSources: /readyz names each source's state and /metrics exports it with the
// radar.
func TestAdminShowsTheSources(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := e.start(t, e.config(t))
	get := func(path string) string {
		resp, err := http.Get("http://" + in.admin + path)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	eventually(t, 10*time.Second, "the inventory's first refresh", func() (bool, string) {
		r := get("/readyz")
		return strings.Contains(r, "source inventory: ok"), r
	})
	metrics := get("/metrics")
	for _, want := range []string{`plinth_stats_source_up{source="inventory"} 1`, `plinth_stats_radar{indicator="nodes_health"} 0`,
		`plinth_stats_source_failures_total{source="inventory"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
