package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/app"
)

func TestConfigReadsLvmdYAML(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(yaml string) string {
		p := filepath.Join(dir, "lvmd.yaml")
		if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	load := func(env ...string) (app.Config, error) {
		cfg := app.Defaults()
		base := []string{"PLINTH_DATABASE_URL=postgres://x@127.0.0.1/db", "PLINTH_NATS_URL=nats://127.0.0.1:4222"}
		if err := config.Load(&cfg, nil, append(base, env...)); err != nil {
			return cfg, err
		}
		if err := cfg.Resolve(); err != nil {
			return cfg, err
		}
		return cfg, cfg.Validate()
	}
	p := write("socket-name: /run/x/lvmd.sock\ndevice-classes:\n- {name: ssd, volume-group: vg1, default: true}\n")
	cfg, err := load("PLINTH_LVMD_CONFIG=" + p)
	if err != nil || cfg.GRPCAddr != "unix:///run/x/lvmd.sock" || cfg.NodeName == "" {
		t.Fatalf("%v %+v", err, cfg.GRPC)
	}
	cfg, err = load("PLINTH_LVMD_CONFIG="+p, "PLINTH_GRPC_ADDR=unix:///tmp/other.sock")
	if err != nil || cfg.GRPCAddr != "unix:///tmp/other.sock" {
		t.Fatalf("PLINTH_GRPC_ADDR must win over socket-name: %v %v", err, cfg.GRPCAddr)
	}
	p = write("device-classes:\n- {name: ssd, volume-group: vg1, default: true}\n")
	if cfg, err = load("PLINTH_LVMD_CONFIG=" + p); err != nil || cfg.GRPCAddr != "unix://"+app.DefaultSocket {
		t.Fatalf("without socket-name the socket is lvmd's: %v %v", err, cfg.GRPCAddr)
	}
	for _, tt := range []struct {
		yaml string
		env  []string
		want string
	}{
		{"device-classes: []\n", nil, "device-classes: at least one"},
		{"device-classes:\n- {name: ssd, volume-group: vg1, default: true}\n", []string{"PLINTH_LVMD_METADATA_ONLY=maybe"}, "PLINTH_LVMD_METADATA_ONLY"},
		{"device-classes:\n- {name: ssd, volume-group: vg1, default: true}\n", []string{"PLINTH_LVMD_TLS_ADDR=127.0.0.1:0"}, "needs PLINTH_LVMD_TLS_CERT"},
		{"device-classes:\n- {name: ssd, volume-group: vg1, default: true}\n", []string{"PLINTH_LVMD_COMPRESSION=brotli"}, "PLINTH_LVMD_COMPRESSION"},
		{"socket-name: relative.sock\ndevice-classes:\n- {name: ssd, volume-group: vg1, default: true}\n", nil, "absolute path"},
		{"device-classes:\n- {name: ssd, volume-group: vg1, default: true}\n", []string{"PLINTH_LVMD_DEFAULT_S3_ENDPOINT=http://127.0.0.1:7304"}, "PLINTH_LVMD_DEFAULT_S3_ACCESS_KEY_ID_FILE: required"},
		{"device-classes:\n- {name: ssd, volume-group: vg1, default: true}\n", []string{"PLINTH_LVMD_DEFAULT_S3_ENDPOINT=http://k:s@127.0.0.1:7304"}, "without credentials"},
		{"device-classes:\n- {name: ssd, volume-group: vg1, default: true}\n", []string{"PLINTH_LVMD_DEFAULT_S3_SECRET_ACCESS_KEY_FILE=/x"}, "need PLINTH_LVMD_DEFAULT_S3_ENDPOINT"},
		{"device-classes:\n- {name: ssd, volume-group: vg1, default: true}\n", []string{"PLINTH_LVMD_DEFAULT_S3_ENDPOINT=http://127.0.0.1:7304",
			"PLINTH_LVMD_DEFAULT_S3_ACCESS_KEY_ID_FILE=/nonexistent/id", "PLINTH_LVMD_DEFAULT_S3_SECRET_ACCESS_KEY_FILE=/nonexistent/secret"}, "PLINTH_LVMD_DEFAULT_S3_ACCESS_KEY_ID_FILE: open"},
	} {
		p := write(tt.yaml)
		if _, err := load(append([]string{"PLINTH_LVMD_CONFIG=" + p}, tt.env...)...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q %v: error %v, want %q", tt.yaml, tt.env, err, tt.want)
		}
	}
	if _, err := load("PLINTH_LVMD_CONFIG=" + filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "PLINTH_LVMD_CONFIG") {
		t.Errorf("missing file: %v", err)
	}
}

// TestStartRefusesAMissingVolumeGroup names the configuration field whose volume group is
// not on the node.
func TestStartRefusesAMissingVolumeGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 1 << 30})
	yaml := "device-classes:\n- {name: ssd, volume-group: " + e.vgs[0].Name + ", default: true}\n- {name: gone, volume-group: no_such_vg_here}\n"
	if err := os.WriteFile(filepath.Join(e.dir, "lvmd.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	log, _ := telemetry.NewLogger(e.logs, "json", "info")
	_, err := app.Open(context.Background(), e.config(t), log)
	if err == nil || !strings.Contains(err.Error(), "device-classes[1].volume-group") || !strings.Contains(err.Error(), "no_such_vg_here") {
		t.Fatalf("start with a missing VG: %v", err)
	}
}
