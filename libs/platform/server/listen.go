package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/config"
)

// listen binds addr ("host:port" or "unix:///abs/path.sock"). For a unix socket it also
// returns the socket path, which the caller removes on shutdown.
func listen(addr string) (lis net.Listener, socketPath string, err error) {
	network, address, err := config.ParseListenAddr(addr)
	if err != nil {
		return nil, "", err
	}
	if network == "tcp" {
		lis, err = net.Listen("tcp", address)
		return lis, "", err
	}
	if err := removeStaleSocket(address); err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(filepath.Dir(address), 0o700); err != nil {
		return nil, "", fmt.Errorf("create socket directory: %w", err)
	}
	lis, err = listenUnixPrivate(address)
	if err != nil {
		return nil, "", err
	}
	return lis, address, nil
}

// removeStaleSocket removes a socket left behind by a process that died without cleaning
// up, but refuses to touch a regular file or a socket another process still serves.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket; remove it or choose another address", path)
	}
	if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = conn.Close() // only probing
		return fmt.Errorf("%s is served by another process; stop it or choose another address", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale socket: %w", err)
	}
	return nil
}

// closeListener closes the gRPC listener (if still open) and removes the unix socket file.
func (s *Server) closeListener() {
	_ = s.lis.Close() // already closed by grpc.Server.Stop in the normal path
	if s.socketPath != "" {
		if err := os.Remove(s.socketPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("could not remove unix socket", "path", s.socketPath, "error", err)
		}
	}
}
