// Package tlsconfig writes the pairs of the plugin's mutual TLS for local use (gen-certs):
// CloudNativePG's convention for TCP plugins, a self-signed server pair the operator trusts
// alone and a self-signed client pair that is the plugin's client CA. The same layout is
// Plinth's certs volume for every mutual-TLS backend; libs/platform/mtls serves and dials it.
package tlsconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Generated names the files Generate writes into its directory.
type Generated struct {
	// ServerCert and ServerKey are the plugin's pair (PLINTH_CNPGI_TLS_CERT, _KEY; the
	// cnpg.io/pluginServerSecret in Kubernetes). ClientCert and ClientKey are the operator's
	// (the cnpg.io/pluginClientSecret); ClientCert doubles as the plugin's client CA
	// (PLINTH_CNPGI_TLS_CLIENT_CA).
	ServerCert, ServerKey, ClientCert, ClientKey string
}

// Generate writes a self-signed server pair valid for hosts (DNS names or IP addresses; the
// operator verifies the plugin's Service name, or the cnpg.io/pluginServerName annotation)
// and a self-signed client pair into dir, keys readable by their owner only. It refuses to
// overwrite existing files unless overwrite is set, so a rerun cannot silently invalidate the
// certificates a running operator trusts.
func Generate(dir string, hosts []string, validity time.Duration, overwrite bool) (Generated, error) {
	if len(hosts) == 0 {
		return Generated{}, errors.New("gen-certs: at least one host name for the server certificate is required")
	}
	if validity < time.Hour {
		return Generated{}, errors.New("gen-certs: validity must be at least one hour")
	}
	g := Generated{
		ServerCert: filepath.Join(dir, "server.crt"), ServerKey: filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key"),
	}
	if !overwrite {
		for _, p := range []string{g.ServerCert, g.ServerKey, g.ClientCert, g.ClientKey} {
			if _, err := os.Stat(p); err == nil {
				return Generated{}, fmt.Errorf("gen-certs: %s exists; remove it or pass -force", p)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return Generated{}, fmt.Errorf("gen-certs: %w", err)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Generated{}, fmt.Errorf("gen-certs: %w", err)
	}
	now := time.Now()
	server := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0], Organization: []string{"Plinth cnpgi-plugin"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			server.IPAddresses = append(server.IPAddresses, ip)
		} else {
			server.DNSNames = append(server.DNSNames, h)
		}
	}
	client := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "cnpg-operator", Organization: []string{"Plinth cnpgi-plugin"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range []struct {
		tmpl      *x509.Certificate
		cert, key string
	}{{server, g.ServerCert, g.ServerKey}, {client, g.ClientCert, g.ClientKey}} {
		if err := selfSign(c.tmpl, now, validity, c.cert, c.key); err != nil {
			return Generated{}, err
		}
	}
	return g, nil
}

// selfSign completes tmpl as a self-signed leaf, its own trust anchor, and writes it.
func selfSign(tmpl *x509.Certificate, now time.Time, validity time.Duration, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("gen-certs: key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return fmt.Errorf("gen-certs: serial: %w", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-5 * time.Minute) // tolerate clock skew between hosts
	tmpl.NotAfter = now.Add(validity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("gen-certs: certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("gen-certs: key: %w", err)
	}
	if err := writePEM(keyPath, "PRIVATE KEY", keyDER, 0o600); err != nil {
		return err
	}
	return writePEM(certPath, "CERTIFICATE", der, 0o644)
}

// writePEM writes atomically (temporary file and rename), so a reloading server never reads
// half a file.
func writePEM(path, blockType string, der []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("gen-certs: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	err = tmp.Chmod(mode)
	if err == nil {
		err = pem.Encode(tmp, &pem.Block{Type: blockType, Bytes: der})
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("gen-certs: write %s: %w", path, err)
	}
	return nil
}
