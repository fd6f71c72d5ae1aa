package config

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

func TestUnknownNamesMisspeltSettingsOnly(t *testing.T) {
	var c testConfig
	environ := []string{
		"PLINTH_GRPC_ADDR=127.0.0.1:1",    // Common's
		"PLINTH_GPRC_ADDR=127.0.0.1:2",    // typo
		"PLINTH_LOG_LEVEL=debug",          // Telemetry's
		"PLINTH_LOG_LEVLE=debug",          // typo
		"PLINTH_TEST_STRICT=1",            // shared: read by tests
		"PLINTH_HOME=/tmp/h",              // shared: read by the launcher
		"PLINTH_KAAS_PROVIDER=vagrant",    // another binary's setting
		"PLINTH_KAAS_PROVIDER=maas",       // listed once
		"PLINTH_EMPTY=",                   // set but empty still counts
		"T_NAME=x", "PATH=/bin", "HOME=/", // not PLINTH_*: never checked
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4317",
		"NOEQUALS",
	}
	got := Unknown(&c, environ)
	want := []string{"PLINTH_EMPTY", "PLINTH_GPRC_ADDR", "PLINTH_KAAS_PROVIDER", "PLINTH_LOG_LEVLE"}
	if !slices.Equal(got, want) {
		t.Fatalf("Unknown = %q, want %q", got, want)
	}
	if got := Unknown(&c, []string{"PLINTH_GRPC_ADDR=x", "PLINTH_NATS_PASSWORD_FILE=/f"}); got != nil {
		t.Errorf("every variable is a setting, Unknown = %q", got)
	}
	if got := Unknown(c, environ); got != nil {
		t.Errorf("not a pointer: Unknown = %q, want nil", got)
	}
}

// The warning is one structured line naming the variables, never their values, which may be
// a secret given to the wrong name.
func TestWarnUnknownLogsNamesNotValues(t *testing.T) {
	var c testConfig
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	WarnUnknown(log, &c, []string{"PLINTH_KAAS_SECRET_KEYY=s3cr3t-value", "PLINTH_NATS_URL=nats://u:pw@h:4222", "PLINTH_ADMIN_ADR=x"})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one log line, got %d: %s", len(lines), buf.String())
	}
	var rec struct {
		Level     string   `json:"level"`
		Variables []string `json:"variables"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Level != "WARN" || !slices.Equal(rec.Variables, []string{"PLINTH_ADMIN_ADR", "PLINTH_KAAS_SECRET_KEYY"}) {
		t.Errorf("got %s", lines[0])
	}
	for _, secret := range []string{"s3cr3t", "pw@", "=x"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("the warning shows a value (%q): %s", secret, lines[0])
		}
	}

	buf.Reset()
	WarnUnknown(log, &c, []string{"PLINTH_GRPC_ADDR=x", "PLINTH_TEST_STRICT=1"})
	if buf.Len() != 0 {
		t.Errorf("nothing unknown, yet logged: %s", buf.String())
	}
}

func TestSharedIsPlinthNamesOnce(t *testing.T) {
	names := Shared()
	if len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
		t.Errorf("Shared lists a name twice: %q", names)
	}
	for _, n := range names {
		if !strings.HasPrefix(n, EnvPrefix) || !IsShared(n) {
			t.Errorf("%s: not a PLINTH_* name, or IsShared disagrees", n)
		}
	}
	if IsShared("PLINTH_GRPC_ADDR") {
		t.Error("a binary's setting is not shared")
	}
}
