package testenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
)

// clusterDirPrefix names private test clusters' temp dirs: <prefix><pid>-<random>.
const clusterDirPrefix = "plinth-testpg-"

// reapStaleClusters stops and removes private clusters whose test binary died without
// running Main's cleanup (a -timeout panic, a kill): the postmaster would otherwise
// keep running forever.
func reapStaleClusters(ctx context.Context) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), clusterDirPrefix+"*"))
	for _, dir := range dirs {
		rest := strings.TrimPrefix(filepath.Base(dir), clusterDirPrefix)
		pidText, _, ok := strings.Cut(rest, "-")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		if err := pglocal.StopDataDir(ctx, filepath.Join(dir, "data")); err == nil {
			_ = os.RemoveAll(dir)
		}
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
