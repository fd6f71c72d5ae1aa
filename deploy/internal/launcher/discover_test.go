package launcher

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestDiscoverFindsMainPackagesUnderServices(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"services/auth/cmd/auth/main.go":                     "package main",
		"services/vagrant-server/cmd/vagrant-server/main.go": "package main",
		"services/vagrant-server/cmd/vagrant-runner/main.go": "package main",
		"services/stats/cmd/stats/main_test.go":              "package main", // tests only: not a binary
		"services/kaas/internal/app/app.go":                  "package app",  // no cmd/
		"services/lvmd-agent/cmd/_old/main.go":               "package main", // ignored like the go tool does
		"services/README.md":                                 "",
	}
	for path, body := range files {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []Binary{
		{Service: "auth", Name: "auth"},
		{Service: "vagrant-server", Name: "vagrant-runner"},
		{Service: "vagrant-server", Name: "vagrant-server"},
	}
	if !slices.Equal(found, want) {
		t.Fatalf("found %v, want %v", found, want)
	}
	if got := found[1].Package(); got != "./services/vagrant-server/cmd/vagrant-runner" {
		t.Errorf("Package() = %s", got)
	}
}

func TestDiscoverWithoutServicesDirectory(t *testing.T) {
	found, err := Discover(t.TempDir())
	if err != nil || len(found) != 0 {
		t.Fatalf("Discover = %v, %v; want nothing and no error", found, err)
	}
}
