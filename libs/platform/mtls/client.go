package mtls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"

	"google.golang.org/grpc/credentials"
)

// ClientFiles are the PEM files of a client end and the name it expects the server to have.
type ClientFiles struct {
	// Cert and Key are the client's certificate and key.
	Cert, Key string
	// ServerCA holds the certificate(s) the server's must be or chain to (a self-signed
	// server certificate is its own CA).
	ServerCA string
	// ServerName is the name sent as SNI and required among the server certificate's names.
	ServerName string
}

// Client is a client end whose files are kept current.
type Client struct {
	r    *reloader
	name string
}

// NewClient loads the files once, so that a bad file fails the start (a *FileError), not
// the first connection. log (nil: none) hears of reloads.
func NewClient(f ClientFiles, log *slog.Logger) (*Client, error) {
	if f.Cert == "" || f.Key == "" || f.ServerCA == "" || f.ServerName == "" {
		return nil, errors.New("tls: the client certificate, its key, the server CA and the server name are all required")
	}
	r, err := newReloader(files{cert: f.Cert, key: f.Key, ca: f.ServerCA, pairRole: ClientPair, caRole: ServerCA}, log)
	if err != nil {
		return nil, err
	}
	return &Client{r: r, name: f.ServerName}, nil
}

// Config is the client's tls.Config: TLS 1.3, ServerName as SNI, the client pair presented
// and the server verified against the CA file as they are when each connection is made.
func (c *Client) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ServerName: c.name,
		NextProtos: alpn,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			pair := c.r.current().pair
			return &pair, nil
		},
		// tls.Config reads RootCAs once per Config, so the standard verification would keep
		// trusting the CA of the start. It is skipped for verifyServer, which does the same
		// checks (chain to the roots, validity, server auth usage, the name) with the roots
		// of now. It runs on every handshake, resumed ones included.
		InsecureSkipVerify: true,
		VerifyConnection:   c.verifyServer,
	}
}

func (c *Client) verifyServer(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, cert := range cs.PeerCertificates[1:] {
		inter.AddCert(cert)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		DNSName: c.name, Roots: c.r.current().roots, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
	}
	return nil
}

// Credentials are gRPC transport credentials of Config that send ServerName whatever the
// address dialled: grpc-go otherwise takes the server name from the target's host (an IP
// address, a compose service's alias), which would not be the name the server's certificate
// carries.
func (c *Client) Credentials() credentials.TransportCredentials {
	return namedCreds{TransportCredentials: credentials.NewTLS(c.Config()), name: c.name}
}

type namedCreds struct {
	credentials.TransportCredentials
	name string
}

// ClientHandshake runs the TLS handshake as if the authority were the server name.
func (n namedCreds) ClientHandshake(ctx context.Context, _ string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return n.TransportCredentials.ClientHandshake(ctx, n.name, raw)
}

// Clone copies the credentials.
func (n namedCreds) Clone() credentials.TransportCredentials {
	return namedCreds{TransportCredentials: n.TransportCredentials.Clone(), name: n.name}
}
