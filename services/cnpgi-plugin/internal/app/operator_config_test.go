package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOperatorDefaults(t *testing.T) {
	cfg, err := load(t, "PLINTH_DATABASE_URL=postgres://u@h/db")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLSAddr != "" || cfg.SidecarImage != "" || cfg.RequeueAfter != 30*time.Second || cfg.ProbeTimeout != 5*time.Second || cfg.WALEventBatch != 32 || cfg.WALEventInterval != 10*time.Second {
		t.Fatalf("defaults %+v", cfg.OperatorConfig)
	}
}

func TestOperatorSettingsNameEveryProblem(t *testing.T) {
	_, err := load(t, "PLINTH_DATABASE_URL=postgres://u@h/db",
		"PLINTH_CNPGI_TLS_ADDR=unix:///x.sock", "PLINTH_CNPGI_TLS_CERT=/nonexistent/server.crt",
		"PLINTH_CNPGI_SIDECAR_CONFIG_MAP=cm", "PLINTH_CNPGI_REQUEUE_AFTER=10ms", "PLINTH_CNPGI_PROBE_TIMEOUT=30s",
		"PLINTH_CNPGI_WAL_EVENT_BATCH=0", "PLINTH_CNPGI_WAL_EVENT_INTERVAL=1ms")
	if err == nil {
		t.Fatal("bad operator settings accepted")
	}
	for _, want := range []string{"must be a TCP host:port", "PLINTH_CNPGI_TLS_CERT (-tls-cert): stat", "PLINTH_CNPGI_TLS_KEY (-tls-key): required",
		"PLINTH_CNPGI_TLS_CLIENT_CA (-tls-client-ca): required", "set PLINTH_CNPGI_SIDECAR_IMAGE too", "PLINTH_CNPGI_REQUEUE_AFTER", "PLINTH_CNPGI_PROBE_TIMEOUT",
		"PLINTH_CNPGI_WAL_EVENT_BATCH", "PLINTH_CNPGI_WAL_EVENT_INTERVAL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// TestGenCertsFeedsTheTLSSettings: what gen-certs prints is a working TLS configuration.
func TestGenCertsFeedsTheTLSSettings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	var out, errOut bytes.Buffer
	if err := genCerts([]string{"-dir", dir, "-hosts", "cnpgi-plugin, 127.0.0.1", "-days", "3"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	env := []string{"PLINTH_DATABASE_URL=postgres://u@h/db", "PLINTH_CNPGI_TLS_ADDR=127.0.0.1:0"}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "PLINTH_") {
			env = append(env, line)
		}
	}
	if len(env) != 5 {
		t.Fatalf("gen-certs printed %q", out.String())
	}
	if _, err := load(t, env...); err != nil {
		t.Fatalf("the printed settings do not validate: %v", err)
	}
	if err := genCerts([]string{"-dir", dir}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "-force") {
		t.Fatalf("a second run overwrote the certificates: %v", err)
	}
	if err := genCerts([]string{"-dir", dir, "-force", "-hosts", " , "}, &out, &errOut); err == nil {
		t.Fatal("no host names accepted")
	}
	if err := genCerts([]string{"-h"}, &out, &errOut); err != nil || !strings.Contains(errOut.String(), "usage: cnpgi-plugin gen-certs") {
		t.Fatalf("-h: %v %q", err, errOut.String())
	}
	if fi, err := os.Stat(filepath.Join(dir, "server.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("server.key: %v %v", fi, err)
	}
}
