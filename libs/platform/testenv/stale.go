package testenv

import (
	"context"
	"errors"
	"fmt"
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
	reapStale(clusterDirPrefix, func(dir string) error {
		return pglocal.StopDataDir(ctx, filepath.Join(dir, "data"))
	})
}

// processDir makes $TMPDIR/<prefix><pid>-<random>, a directory of this process that
// reapStale removes once the process is gone.
func processDir(prefix string) (string, error) {
	return os.MkdirTemp("", fmt.Sprintf("%s%d-", prefix, os.Getpid()))
}

// reapStale removes the processDir directories of processes no longer running, after stop
// (when given) has stopped what ran in one; a directory stop fails on is kept.
func reapStale(prefix string, stop func(dir string) error) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, dir := range dirs {
		rest := strings.TrimPrefix(filepath.Base(dir), prefix)
		pidText, _, ok := strings.Cut(rest, "-")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		if stop == nil || stop(dir) == nil {
			_ = os.RemoveAll(dir)
		}
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
