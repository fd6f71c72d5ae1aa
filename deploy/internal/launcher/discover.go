package launcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Binary is one main package found under services/<Service>/cmd/<Name>.
type Binary struct {
	Service string
	Name    string
}

// Package is the package path `go build` takes, relative to the repository root.
func (b Binary) Package() string {
	return "./" + filepath.ToSlash(filepath.Join("services", b.Service, "cmd", b.Name))
}

// Discover lists every binary under root/services: each directory services/<svc>/cmd/<name>
// holding a non-test Go file. A missing services/ directory means no services yet.
func Discover(root string) ([]Binary, error) {
	servicesDir := filepath.Join(root, "services")
	svcs, err := os.ReadDir(servicesDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list services: %w", err)
	}
	var found []Binary
	for _, svc := range svcs {
		if !svc.IsDir() || skipped(svc.Name()) {
			continue
		}
		cmds, err := os.ReadDir(filepath.Join(servicesDir, svc.Name(), "cmd"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list commands of services/%s: %w", svc.Name(), err)
		}
		for _, cmd := range cmds {
			if !cmd.IsDir() || skipped(cmd.Name()) {
				continue
			}
			ok, err := hasGoSource(filepath.Join(servicesDir, svc.Name(), "cmd", cmd.Name()))
			if err != nil {
				return nil, err
			}
			if ok {
				found = append(found, Binary{Service: svc.Name(), Name: cmd.Name()})
			}
		}
	}
	return found, nil
}

// skipped matches the directories the go tool itself ignores.
func skipped(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata"
}

func hasGoSource(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", dir, err)
	}
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			return true, nil
		}
	}
	return false, nil
}
