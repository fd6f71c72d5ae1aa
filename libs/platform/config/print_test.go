package config

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestRedactionInLogValueAndString(t *testing.T) {
	c := testConfig{}
	environ := []string{
		"T_API_TOKEN=tok-hunter2",
		"PLINTH_DATABASE_URL=postgres://app:pw-hunter2@db:5432/plinth",
		"PLINTH_NATS_URL=nats://user:nats-hunter2@n1:4222",
		"T_NAME=https://u:name-hunter2@example.com", // a credential in a non-secret field
	}
	if err := Load(&c, nil, environ); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("starting", "config", LogValue(&c))
	printed := String(&c)

	for name, out := range map[string]string{"LogValue": buf.String(), "String": printed} {
		if strings.Contains(out, "hunter2") {
			t.Errorf("%s leaks a secret:\n%s", name, out)
		}
		for _, w := range []string{
			"T_API_TOKEN", "[REDACTED]",
			"postgres://app:xxxxx@db:5432/plinth",
			"nats://user:xxxxx@n1:4222",
			"https://u:xxxxx@example.com",
			"PLINTH_LOG_LEVEL", "info",
			"flag-only", // flag-only settings are keyed by flag name
		} {
			if !strings.Contains(out, w) {
				t.Errorf("%s output does not contain %q:\n%s", name, w, out)
			}
		}
	}
	if !strings.Contains(printed, "PLINTH_SHUTDOWN_TIMEOUT=15s\n") {
		t.Errorf("String does not print the duration in Go syntax:\n%s", printed)
	}
}

func TestRedactionKeepsUnsetSecretsVisible(t *testing.T) {
	var c testConfig
	if err := Load(&c, nil, []string{"PLINTH_DATABASE_URL=host=db password=kw-hunter2"}); err != nil {
		t.Fatal(err)
	}
	out := String(&c)
	if !strings.Contains(out, "T_API_TOKEN=\n") {
		t.Errorf("unset secret should print empty:\n%s", out)
	}
	if !strings.Contains(out, "PLINTH_DATABASE_URL=[REDACTED]\n") || strings.Contains(out, "hunter2") {
		t.Errorf("a keyword DSN must be fully redacted:\n%s", out)
	}
}
