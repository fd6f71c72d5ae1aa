// Command vagrant-runner executes vagrant-server jobs: it registers with the server, streams
// jobs from it and runs them, driving machines through its providers (netns: Linux network
// namespaces on a private bridge, each machine a runc container: a sandbox).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runnerapp"
)

func main() {
	if err := runnerapp.Main(context.Background(), os.Args[1:], os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, "vagrant-runner:", err)
		os.Exit(1)
	}
}
