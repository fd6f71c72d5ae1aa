// Command gateway is Plinth's local gateway: gRPC, gRPC-Web and Connect on one port, routed
// to the suite's services by the route table, with the same token rule as Envoy's ext_authz.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/plinth-dev/plinth/services/gateway/internal/app"
)

func main() {
	if err := app.Main(context.Background(), os.Args[1:], os.Environ(), app.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}
