package runnerapp_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runnerapp"
)

// TestAdminEndpoints runs the assembled runner against a server that is not there: it is
// healthy and ready (a restart would not bring the server back) and says why it is not
// registered.
func TestAdminEndpoints(t *testing.T) {
	cfg := runnerapp.Defaults()
	env := []string{"PLINTH_ADMIN_ADDR=127.0.0.1:0", "PLINTH_VAGRANT_SERVER_ADDR=127.0.0.1:1",
		"PLINTH_VAGRANT_RUNNER_STATE_DIR=" + t.TempDir(), "PLINTH_VAGRANT_TOKEN=t",
		"PLINTH_VAGRANT_RUNNER_ID=general-1", "PLINTH_VAGRANT_RUNNER_RESERVED_ID=kaas-1"}
	if err := config.Load(&cfg, nil, env); err != nil {
		t.Fatal(err)
	}
	s, err := runnerapp.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + s.AdminAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor(t, "/readyz to say why the runner is not registered", func() bool {
		code, body := get("/readyz")
		return code == 200 && strings.Contains(body, "runner general-1: not registered: ") &&
			strings.Contains(body, "runner kaas-1: not registered: ") && strings.Contains(body, "runner kaas-1: running 0 of 4 jobs at once")
	})
	for _, id := range []string{"general-1", "kaas-1"} {
		if code, body := get("/metrics"); code != 200 || !strings.Contains(body, `plinth_vagrant_runner_registered{runner_id="`+id+`"} 0`) {
			t.Errorf("/metrics: %d, lacks plinth_vagrant_runner_registered of %s:\n%s", code, id, body)
		}
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
