package server

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// listenUnixPrivate creates a unix socket that only the owner can connect to. The mode is
// set between bind and listen: with net.Listen followed by chmod, a client could connect in
// the window before chmod, and with umask the whole process (other goroutines creating
// files) would be affected.
func listenUnixPrivate(path string) (net.Listener, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("create unix socket: %w", err)
	}
	fail := func(step string, err error) (net.Listener, error) {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("%s %s: %w", step, path, err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		return fail("bind", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = os.Remove(path)
		return fail("chmod", err)
	}
	if err := syscall.Listen(fd, syscall.SOMAXCONN); err != nil {
		_ = os.Remove(path)
		return fail("listen", err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close() // FileListener dups the descriptor
	lis, err := net.FileListener(f)
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	return lis, nil
}
