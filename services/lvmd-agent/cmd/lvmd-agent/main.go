// Command lvmd-agent is Plinth's per-node LVM agent: TopoLVM's lvmd protocol
// (proto.LVService, proto.VGService) on real lvm2, with backups and restores through S3.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/app"
)

func main() {
	if err := app.Main(context.Background(), os.Args[1:], os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, "lvmd-agent:", err)
		os.Exit(1)
	}
}
