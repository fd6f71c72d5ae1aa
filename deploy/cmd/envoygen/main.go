// Command envoygen writes the Envoy gateway configurations generated from the route table
// (services/gateway/routes): deploy/envoy/envoy.yaml for docker-compose and
// deploy/k8s/base/gateway/envoy.yaml for Kubernetes. `make generate-envoy` runs it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/plinth-dev/plinth/deploy/internal/envoygen"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "envoygen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("envoygen", flag.ContinueOnError)
	root := fs.String("root", "..", "repository root (the directory holding go.work)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if _, err := os.Stat(filepath.Join(*root, "go.work")); err != nil {
		return fmt.Errorf("-root %s is not the repository root: %w", *root, err)
	}
	files, err := envoygen.RenderAll()
	if err != nil {
		return err
	}
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		p := filepath.Join(*root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[rel], 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", rel)
	}
	return nil
}
