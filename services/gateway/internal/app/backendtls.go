package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/mtls"
)

// The files of one backend's mutual TLS in PLINTH_GATEWAY_BACKEND_TLS_DIR/<backend>/, the
// layout of the certs volume (`cnpgi-plugin gen-certs -dir <dir>/<backend>` writes it): the
// gateway presents client.crt and client.key and trusts server.crt alone, as Envoy does.
const (
	clientCertFile = "client.crt"
	clientKeyFile  = "client.key"
	serverCertFile = "server.crt"
)

// BackendTLS returns the backends dialled with mutual TLS and their files: with
// BackendTLSDir set, every host:port backend whose <dir>/<backend>/client.crt exists. Unix
// socket backends stay plaintext (the socket's permissions guard them). A backend with
// client.crt but not the rest of its files is an error naming the missing ones.
func (c *Config) BackendTLS() (map[string]mtls.ClientFiles, error) {
	out := map[string]mtls.ClientFiles{}
	if c.BackendTLSDir == "" {
		return out, nil
	}
	if fi, err := os.Stat(c.BackendTLSDir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("PLINTH_GATEWAY_BACKEND_TLS_DIR: %s is not a directory (it holds <backend>/client.crt, client.key and server.crt)", c.BackendTLSDir)
	}
	var errs []error
	for name, addr := range c.Backends() {
		if network, _, err := config.ParseListenAddr(addr); err != nil || network != "tcp" {
			continue
		}
		dir := filepath.Join(c.BackendTLSDir, name)
		f := mtls.ClientFiles{
			Cert: filepath.Join(dir, clientCertFile), Key: filepath.Join(dir, clientKeyFile),
			ServerCA: filepath.Join(dir, serverCertFile), ServerName: name,
		}
		if _, err := os.Stat(f.Cert); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			errs = append(errs, fmt.Errorf("PLINTH_GATEWAY_BACKEND_TLS_DIR: %s: %w", name, err))
			continue
		}
		var missing []string
		for _, p := range []string{f.Key, f.ServerCA} {
			if _, err := os.Stat(p); err != nil {
				missing = append(missing, p)
			}
		}
		if len(missing) > 0 {
			errs = append(errs, fmt.Errorf("PLINTH_GATEWAY_BACKEND_TLS_DIR: %s has %s but not %s: its mutual TLS needs %s, %s and %s",
				name, f.Cert, strings.Join(missing, ", "), clientCertFile, clientKeyFile, serverCertFile))
			continue
		}
		out[name] = f
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// tlsBackendNames are the names of m's backends, sorted, for the log.
func tlsBackendNames(m map[string]mtls.ClientFiles) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
