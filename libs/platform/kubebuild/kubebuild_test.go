package kubebuild

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRead reads what the launcher writes, tells a missing file from a broken one, and
// refuses a file too large to be a status.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kube-build.json")
	if _, err := Read(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no file: %v, want os.ErrNotExist", err)
	}
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"state":"building","versions":["v1.33.13"],"started":"2026-11-27T21:00:00Z","estimate_seconds":840,"log":"/x/tools-k8s.log","pid":42}`)
	st, err := Read(path)
	want := Status{State: Building, Versions: []string{"v1.33.13"}, Started: time.Date(2026, 11, 27, 21, 0, 0, 0, time.UTC),
		EstimateSeconds: 840, Log: "/x/tools-k8s.log", PID: 42}
	if err != nil || st.State != want.State || st.Versions[0] != want.Versions[0] || !st.Started.Equal(want.Started) ||
		st.EstimateSeconds != want.EstimateSeconds || st.Log != want.Log || st.PID != want.PID {
		t.Errorf("Read = %+v, %v; want %+v", st, err, want)
	}
	write(`{"state":`)
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a broken file: %v, want an error naming it", err)
	}
	write(`{"state":"failed","error":"` + strings.Repeat("x", maxFile) + `"}`)
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), "not a build status") {
		t.Errorf("an oversized file: %v, want it refused", err)
	}
}
