//go:build !linux

package server

import (
	"fmt"
	"net"
	"os"
)

// listenUnixPrivate listens and then restricts the socket to its owner. Unlike the Linux
// version, a client can connect in the short window before chmod; Plinth targets Linux.
func listenUnixPrivate(path string) (net.Listener, error) {
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = lis.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	return lis, nil
}
