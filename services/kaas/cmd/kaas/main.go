// Command kaas is Plinth's Kubernetes-as-a-service control plane (cnct.kaas.api.Cluster over
// gRPC, and upstream's REST paths): clusters, node pools, scaling and upgrades, with machines
// from MAAS or the suite's vagrant-server.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/plinth-dev/plinth/services/kaas/internal/app"
)

func main() {
	if err := app.Main(context.Background(), os.Args[1:], os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, "kaas:", err)
		os.Exit(1)
	}
}
