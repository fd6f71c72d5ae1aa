// Command cnpgi-plugin is Plinth's CloudNativePG plugin (CNPG-I over a unix socket): WAL
// archiving and restore to S3-compatible and POSIX object stores. `cnpgi-plugin wal-archive`
// and `wal-restore` call a running plugin, as archive_command and restore_command.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/app"
)

func main() {
	if err := app.Main(context.Background(), os.Args[1:], os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, "cnpgi-plugin:", err)
		os.Exit(1)
	}
}
