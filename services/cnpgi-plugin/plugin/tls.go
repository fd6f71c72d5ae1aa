package plugin

import (
	"errors"
	"fmt"
	"os"

	"github.com/plinth-dev/plinth/libs/platform/config"
)

// OperatorTLS is the plugin's mutual-TLS listener for a CloudNativePG operator (operator
// mode): its address and the files of CNPG's pluginServerSecret and pluginClientSecret. The
// server's Config embeds it; the launcher fills one for make up (config.Environ), so the
// names are declared here only.
type OperatorTLS struct {
	TLSAddr     string `env:"PLINTH_CNPGI_TLS_ADDR" flag:"tls-addr" usage:"also serve on this TCP host:port with mutual TLS 1.3, for a CloudNativePG operator (operator mode); empty: off"`
	TLSCert     string `env:"PLINTH_CNPGI_TLS_CERT" flag:"tls-cert" usage:"server certificate (PEM) for -tls-addr: tls.crt of the cnpg.io/pluginServerSecret"`
	TLSKey      string `env:"PLINTH_CNPGI_TLS_KEY" flag:"tls-key" usage:"server key (PEM) for -tls-addr: tls.key of the cnpg.io/pluginServerSecret"`
	TLSClientCA string `env:"PLINTH_CNPGI_TLS_CLIENT_CA" flag:"tls-client-ca" usage:"certificate(s) (PEM) clients must present or chain to: tls.crt of the cnpg.io/pluginClientSecret"`
}

// Validate checks that an address is a TCP host:port and comes with the three files, each
// readable; every problem at once.
func (t *OperatorTLS) Validate() error {
	if t.TLSAddr == "" {
		return nil
	}
	var errs []error
	if network, _, err := config.ParseListenAddr(t.TLSAddr); err != nil || network != "tcp" {
		errs = append(errs, fmt.Errorf("PLINTH_CNPGI_TLS_ADDR (-tls-addr): %q must be a TCP host:port", t.TLSAddr))
	}
	for _, f := range []struct{ env, flag, path string }{
		{"PLINTH_CNPGI_TLS_CERT", "tls-cert", t.TLSCert}, {"PLINTH_CNPGI_TLS_KEY", "tls-key", t.TLSKey},
		{"PLINTH_CNPGI_TLS_CLIENT_CA", "tls-client-ca", t.TLSClientCA},
	} {
		if f.path == "" {
			errs = append(errs, fmt.Errorf("%s (-%s): required with PLINTH_CNPGI_TLS_ADDR (`cnpgi-plugin gen-certs` writes a local set)", f.env, f.flag))
		} else if _, err := os.Stat(f.path); err != nil {
			errs = append(errs, fmt.Errorf("%s (-%s): %w", f.env, f.flag, err))
		}
	}
	return errors.Join(errs...)
}
