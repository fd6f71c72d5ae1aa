package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/plinth-dev/plinth/libs/platform/atomicfile"

	cnpgiplugin "github.com/plinth-dev/plinth/services/cnpgi-plugin/plugin"
)

// cnpgiCertDir holds the cnpgi-plugin's mutual-TLS certificates under make up.
func cnpgiCertDir(home string) string { return filepath.Join(home, "certs", "cnpgi") }

// ensureCNPGICerts creates the plugin's self-signed server and client pairs once (CNPG's
// pluginServerSecret/pluginClientSecret convention), with the plugin's own gen-certs command, so
// its operator-mode TLS port serves under make up. Existing certificates are kept.
func ensureCNPGICerts(ctx context.Context, c Config, _ map[string]Placement, say func(string, ...any)) error {
	home := c.Home
	dir := cnpgiCertDir(home)
	if _, err := os.Stat(filepath.Join(dir, "server.crt")); err == nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, filepath.Join(home, "bin", "cnpgi-plugin"), "gen-certs", "-dir", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cnpgi-plugin gen-certs: %w: %s", err, out)
	}
	say("generated cnpgi-plugin mutual-TLS certificates in %s (client pair: client.crt/client.key)", dir)
	return nil
}

// cnpgiStoreFile is the plugin's store configuration make up writes when the dev Ceph runs.
func cnpgiStoreFile(home string) string { return filepath.Join(home, "cnpgi-stores.yaml") }

// cnpgiLocalStore is the POSIX store the plugin uses without a configuration file (its
// default, <plugin dir>/../cnpgi-store): kept in the file as "local" so what was archived
// there before the dev Ceph stays reachable (objectStore: local).
func cnpgiLocalStore(home string) string { return filepath.Join(home, "cnpgi-store") }

// writeCNPGIStores writes the plugin's store configuration for the dev Ceph: the default store
// "ceph" is its radosgw, with the keys (by file reference) of the plugin's own user, limited
// to its bucket; beside it the POSIX store "local".
func writeCNPGIStores(home string, s3 devS3) error {
	u, ok := s3.Services["cnpgi-plugin"]
	if !ok {
		return errors.New("dev Ceph: no S3 user of cnpgi-plugin")
	}
	conf := fmt.Sprintf(`# Written by make up (plinth-up) for its dev Ceph at every start; PLINTH_CNPGI_CONFIG set
# in make up's environment replaces it.
defaultStore: ceph
stores:
  ceph:
    s3:
      endpoint: %q
      bucket: %q
      region: %q
      pathStyle: true
      accessKeyId: {file: %q}
      secretAccessKey: {file: %q}
  local:
    posix:
      path: %q
`, s3.Endpoint, u.Bucket, s3.Region, u.AccessKeyFile, u.SecretKeyFile, cnpgiLocalStore(home))
	return atomicfile.WritePrivate(cnpgiStoreFile(home), []byte(conf))
}

// cnpgiEnv places the plugin's sockets and certificates under home and, when the dev Ceph
// runs and the user has no PLINTH_CNPGI_CONFIG of their own, gives it the dev Ceph's stores.
func cnpgiEnv(c Config, placed map[string]Placement) map[string]string {
	home := c.Home
	certs := cnpgiCertDir(home)
	// The socket and the operator's TLS listener as the plugin declares them (its plugin
	// package): no name spelt here.
	env := declared(
		&cnpgiplugin.Endpoint{PluginDir: filepath.Join(home, "plugins"), PluginName: CNPGIPluginName},
		&cnpgiplugin.OperatorTLS{TLSAddr: placed["cnpgi-plugin"].TLS, TLSCert: filepath.Join(certs, "server.crt"),
			TLSKey: filepath.Join(certs, "server.key"), TLSClientCA: filepath.Join(certs, "client.crt")})
	if _, ok := readDevCeph(home); ok && c.CNPGIConfig == "" {
		env[envCNPGIConfig] = cnpgiStoreFile(home)
	}
	return env
}
