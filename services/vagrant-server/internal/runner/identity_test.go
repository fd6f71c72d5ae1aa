package runner_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner"
)

func TestLoadIDPersists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	first, err := runner.LoadID("", dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := runner.LoadID("", dir)
	if err != nil || again != first {
		t.Errorf("second LoadID = %q, %v; want the persisted %q", again, err, first)
	}
	if id, _ := runner.LoadID("configured", dir); id != "configured" {
		t.Errorf("configured id ignored: %q", id)
	}
	if err := os.WriteFile(filepath.Join(dir, "id"), []byte("not an id!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.LoadID("", dir); err == nil {
		t.Error("a corrupt id file was accepted")
	}
}

func TestTokenSource(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if _, err := runner.TokenSource("", file)(); !errors.Is(err, runner.ErrNoToken) || !strings.Contains(err.Error(), "GenerateLoginToken") {
		t.Errorf("missing file: %v, want ErrNoToken saying how to get one", err)
	}
	_ = os.WriteFile(file, []byte("  from-file\n"), 0o600)
	if tok, err := runner.TokenSource("", file)(); tok != "from-file" || err != nil {
		t.Errorf("file token = %q, %v", tok, err)
	}
	if tok, _ := runner.TokenSource("from-env", file)(); tok != "from-env" {
		t.Errorf("configured token does not win: %q", tok)
	}
}

func TestStatusText(t *testing.T) {
	text := runner.StatusText(runner.Status{ID: "r1", Registered: true, Slots: 4, Jobs: []string{"J8", "J9"}})
	if !strings.Contains(text, "registered with vagrant-server") || !strings.Contains(text, "running 2 of 4 jobs at once: J8, J9") {
		t.Errorf("status while registered: %q", text)
	}
}
