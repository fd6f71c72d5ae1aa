package launcher

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockHome takes an exclusive lock on HOME/lock for the life of the run: two launchers on one
// home would share a NATS store and a Postgres data directory, and corrupt both. The kernel
// drops the lock when the process dies, so a crash never leaves a stale lock behind.
func lockHome(home string) (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(home, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", home, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another plinth-up is running with home %s: stop it first, or set PLINTH_HOME to another directory (and -port-offset)", home)
		}
		return nil, fmt.Errorf("lock %s: %w", home, err)
	}
	return func() { _ = f.Close() }, nil
}
