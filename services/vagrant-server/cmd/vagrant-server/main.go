// Command vagrant-server is Plinth's Vagrant server: hashicorp.vagrant.Vagrant over gRPC,
// with the basis/project/target/box registry, the job queue, job output and Vagrant's token
// protocol in Postgres.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/app"
)

func main() {
	if err := app.Main(context.Background(), os.Args[1:], os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, "vagrant-server:", err)
		os.Exit(1)
	}
}
