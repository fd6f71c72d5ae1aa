package launcher

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// cnpgiCertDir holds the cnpgi-plugin's mutual-TLS certificates under make up.
func cnpgiCertDir(home string) string { return filepath.Join(home, "certs", "cnpgi") }

// ensureCNPGICerts creates the plugin's self-signed server and client pairs once (CNPG's
// pluginServerSecret/pluginClientSecret convention), with the plugin's own gen-certs command, so
// its operator-mode TLS port serves under make up. Existing certificates are kept.
func ensureCNPGICerts(ctx context.Context, home string, _ map[string]Placement, say func(string, ...any)) error {
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
