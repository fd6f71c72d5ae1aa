package tlsconfig

import (
	"context"
	"crypto/tls"
	"net"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// PerListener lets one gRPC server speak mutual TLS on the listeners wrapped by Listener and
// plaintext on the others: the instance side's unix socket (private to the plugin's user, as
// the instance manager dials it without TLS) and the operator's TCP port serve the same
// services, with one interceptor chain, one health service and one graceful stop.
type PerListener struct {
	tls credentials.TransportCredentials
}

// NewPerListener uses cfg for the connections accepted through Listener.
func NewPerListener(cfg *tls.Config) *PerListener {
	return &PerListener{tls: credentials.NewTLS(cfg)}
}

// Listener marks the connections lis accepts as TLS ones.
func (p *PerListener) Listener(lis net.Listener) net.Listener { return tlsListener{lis} }

type tlsListener struct{ net.Listener }

func (l tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return tlsConn{c}, nil
}

// tlsConn marks a connection from a TLS listener; gRPC hands the accepted connection to
// ServerHandshake unchanged.
type tlsConn struct{ net.Conn }

// ServerHandshake runs the TLS handshake on marked connections and none on the others.
func (p *PerListener) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	if c, ok := raw.(tlsConn); ok {
		return p.tls.ServerHandshake(c.Conn)
	}
	return insecure.NewCredentials().ServerHandshake(raw)
}

// ClientHandshake is not used: these are server credentials.
func (p *PerListener) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return p.tls.ClientHandshake(ctx, authority, raw)
}

// Info describes the TLS side.
func (p *PerListener) Info() credentials.ProtocolInfo { return p.tls.Info() }

// Clone copies the credentials.
func (p *PerListener) Clone() credentials.TransportCredentials {
	return &PerListener{tls: p.tls.Clone()}
}

// OverrideServerName is deprecated in gRPC and unused by servers.
func (p *PerListener) OverrideServerName(name string) error {
	return p.tls.OverrideServerName(name) //nolint:staticcheck // required by the interface
}
