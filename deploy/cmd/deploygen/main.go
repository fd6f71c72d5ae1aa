// Command deploygen writes the deployment files generated from the suite's Go tables: the
// Envoy gateway configurations from the route table (services/gateway/routes;
// deploy/envoy/envoy.yaml for docker-compose, deploy/k8s/base/gateway/envoy.yaml for
// Kubernetes) and the NATS server authorization from the permission table (events.Suite;
// deploy/docker/nats/plinth.conf, deploy/k8s/nats/plinth-users.conf). `make generate-deploy`
// runs it; the generators' tests fail when a committed file is stale.
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
	"github.com/plinth-dev/plinth/deploy/internal/natsconf"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "deploygen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("deploygen", flag.ContinueOnError)
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
	files := map[string][]byte{}
	for _, render := range []func() (map[string][]byte, error){envoygen.RenderAll, natsconf.RenderAll} {
		some, err := render()
		if err != nil {
			return err
		}
		maps.Copy(files, some)
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
