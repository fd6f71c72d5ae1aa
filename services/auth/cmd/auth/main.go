// Command auth is Plinth's auth service (services.auth.AuthService and Envoy ext_authz) and its
// user administration CLI (`auth users ...`).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/plinth-dev/plinth/services/auth/internal/app"
)

func main() {
	if err := app.Main(context.Background(), os.Args[1:], os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, "auth:", err)
		os.Exit(1)
	}
}
