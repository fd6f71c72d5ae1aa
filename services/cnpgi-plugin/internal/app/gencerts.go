package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/tlsconfig"
)

// genCerts runs `cnpgi-plugin gen-certs`: a self-signed server pair and client pair for the
// mutual-TLS listener, and the settings that use them.
func genCerts(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen-certs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".plinth/certs/cnpgi", "directory for server.crt, server.key, client.crt and client.key")
	hosts := fs.String("hosts", "localhost,127.0.0.1", "comma-separated DNS names and IP addresses the server certificate is valid for; in Kubernetes include the plugin Service's name (the operator verifies it)")
	days := fs.Int("days", 365, "validity in days")
	force := fs.Bool("force", false, "overwrite existing files")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: cnpgi-plugin gen-certs [-dir DIR] [-hosts h1,h2] [-days N] [-force]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("gen-certs: unexpected arguments %q", fs.Args())
	}
	var hostList []string
	for h := range strings.SplitSeq(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hostList = append(hostList, h)
		}
	}
	g, err := tlsconfig.Generate(*dir, hostList, time.Duration(*days)*24*time.Hour, *force)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, `# plugin (mutual TLS 1.3 listener)
PLINTH_CNPGI_TLS_CERT=%s
PLINTH_CNPGI_TLS_KEY=%s
PLINTH_CNPGI_TLS_CLIENT_CA=%s
# operator side: present %s with %s, trust %s
`, g.ServerCert, g.ServerKey, g.ClientCert, g.ClientCert, g.ClientKey, g.ServerCert)
	return nil
}
