package service

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// mainConfig is the Config of a binary with one setting of its own.
type mainConfig struct {
	config.Telemetry
	Widget string `env:"PLINTH_WIDGET" flag:"widget" usage:"a setting of this binary"`
}

// runMain runs Main with environ up to Open and returns what it logged.
func runMain(t *testing.T, environ []string) string {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	errOpened := errors.New("opened")
	b := Binary{Name: "t", Config: &mainConfig{}, LogOutput: logs,
		Open: func(context.Context, *slog.Logger) (*Service, error) { return nil, errOpened }}
	if err := Main(context.Background(), b, nil, environ); !errors.Is(err, errOpened) {
		t.Fatalf("Main = %v, want it to reach Open", err)
	}
	return logs.String()
}

// A misspelt setting is run on its default, so Main names it in one warning, without its
// value: a secret set under a wrong name must not reach the logs.
func TestMainWarnsAboutUnknownVariablesByName(t *testing.T) {
	logs := runMain(t, []string{"PATH=/bin", "PLINTH_WIDGET=w", "PLINTH_FOO=s3cr3t-value", "PLINTH_LOG_FORMAT=json"})
	if n := strings.Count(logs, `"level":"WARN"`); n != 1 {
		t.Fatalf("%d warnings, want one:\n%s", n, logs)
	}
	if !strings.Contains(logs, `"variables":["PLINTH_FOO"]`) {
		t.Errorf("the warning does not name PLINTH_FOO alone:\n%s", logs)
	}
	if strings.Contains(logs, "s3cr3t-value") {
		t.Errorf("the value of PLINTH_FOO reached the logs:\n%s", logs)
	}
}

// The binary's own settings, the shared ones the launcher and tests set, and variables
// without the PLINTH_ prefix are no reason to warn.
func TestMainDoesNotWarnAboutKnownOrSharedVariables(t *testing.T) {
	logs := runMain(t, []string{"PATH=/bin", "HOME=/root", "PLINTH_WIDGET=w", "PLINTH_LOG_LEVEL=debug",
		"PLINTH_LOG_FORMAT=json", "PLINTH_HOME=/tmp/h", "PLINTH_TEST_STRICT=1"})
	if !strings.Contains(logs, `"msg":"starting"`) {
		t.Fatalf("no starting line: the logs are not captured:\n%s", logs)
	}
	if strings.Contains(logs, `"level":"WARN"`) {
		t.Errorf("a warning for known or shared variables:\n%s", logs)
	}
}
