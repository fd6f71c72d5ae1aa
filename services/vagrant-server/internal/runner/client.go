package runner

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Protocol range this runner speaks (upstream's api protocol 1..1); sent on every call as
// client-api-protocol, which vagrant-server requires.
const (
	apiProtocolMin     = 1
	apiProtocolCurrent = 1
	headerAPIProtocol  = "client-api-protocol"
)

// Credentials put the protocol header and the login token on every call. The token is read
// anew (Refresh) before each connection attempt, so a rotated token file takes effect without
// a restart.
type Credentials struct {
	source func() (string, error)
	mu     sync.Mutex
	token  string
}

// NewCredentials returns credentials whose token comes from source (see TokenSource).
func NewCredentials(source func() (string, error)) *Credentials {
	return &Credentials{source: source}
}

// Refresh reads the token again; an error says why there is none (the old one is dropped).
func (c *Credentials) Refresh() error {
	tok, err := c.source()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.token = tok
	return err
}

// GetRequestMetadata implements credentials.PerRPCCredentials. The token goes raw in
// `authorization`, as Vagrant's clients send it.
func (c *Credentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	md := map[string]string{headerAPIProtocol: fmt.Sprintf("%d,%d", apiProtocolMin, apiProtocolCurrent)}
	c.mu.Lock()
	if c.token != "" {
		md["authorization"] = c.token
	}
	c.mu.Unlock()
	return md, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials: vagrant-server listens
// in plaintext on loopback or a unix socket in this build.
func (c *Credentials) RequireTransportSecurity() bool { return false }

// Dial returns a client connection to vagrant-server at addr ("host:port" or
// "unix:///abs/path.sock"). It does not connect yet: calls do, and fail while the server is
// down, which the runner's retry loops handle.
func Dial(addr string, creds *Credentials) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(creds),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler()),
	)
	if err != nil {
		return nil, fmt.Errorf("vagrant-server address %q: %w", addr, err)
	}
	return conn, nil
}
