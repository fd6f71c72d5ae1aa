package launcher

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// buildBinaries compiles every found binary into binDir with one `go build` in the workspace,
// which shares work between services and reuses the build cache across restarts.
func buildBinaries(ctx context.Context, root, binDir string, found []Binary, out io.Writer) error {
	if len(found) == 0 {
		return nil
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", binDir, err)
	}
	args := []string{"build", "-o", binDir + string(filepath.Separator)}
	for _, b := range found {
		args = append(args, b.Package())
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("go build of the services failed (%v): fix the errors above; a service module missing from go.work needs a `use` line there", err)
	}
	return nil
}
