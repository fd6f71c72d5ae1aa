// Command stats is Plinth's storage-cluster dashboard backend (stats.StatsService, Koor's
// data-control-center API): it reads a Ceph cluster, Kubernetes and the suite's own node
// inventory in the background and answers from the newest view.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/plinth-dev/plinth/services/stats/internal/app"
)

func main() {
	if err := app.Main(context.Background(), os.Args[1:], os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, "stats:", err)
		os.Exit(1)
	}
}
