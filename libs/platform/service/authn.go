package service

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/events"
)

// NATS is the step that connects a service that consumes events but publishes none (one that
// publishes gets its connection from Publisher). The connection retries in the background,
// so the service starts and serves while NATS is away (its consumers resume when it is back);
// /readyz and plinth_nats_connected say whether it is up; it is drained at shutdown. It
// connects as n's user when one is set.
func (s *Service) NATS(n config.NATS) (*nats.Conn, jetstream.JetStream, error) {
	cred, err := credentials(n)
	if err != nil {
		return nil, nil, err
	}
	nc, err := events.Connect(n.NATSURL, cred, "plinth-"+s.name, s.log)
	if err != nil {
		return nil, nil, err
	}
	s.Defer("nats", func(context.Context) error { return nc.Drain() })
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, nil, fmt.Errorf("events: jetstream: %w", err)
	}
	if err := s.watchNATS(nc); err != nil {
		return nil, nil, err
	}
	if a := s.admin; a != nil {
		a.AddDetail(func(context.Context) string {
			if !nc.IsConnected() {
				return "warning: NATS is unreachable: events are not being consumed until it is back"
			}
			return ""
		})
	}
	return nc, js, nil
}

// reconnect is how a connection from Dial tries its peer again after losing it: soon and
// often. gRPC's default backs off to 120 s, so a peer restarted a few times (a pod deleted, a
// rollout) was refused for tens of seconds after it was Ready again (make kube-up's fault
// run saw 24 s for kaas behind the gateway); peers here are on the suite's own network, where
// a refused connect costs nothing.
var reconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 200 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second},
	MinConnectTimeout: 5 * time.Second,
}

// Dial is the step that opens a client connection to another service's gRPC address
// (host:port or unix:///path; plaintext on the suite's private network), closed at shutdown.
// It does not wait for the peer: calls fail with Unavailable until it answers, and a lost
// peer is tried again within 3 s (reconnect).
func (s *Service) Dial(name, addr string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	if addr == "" {
		return nil, fmt.Errorf("service: the address of %s is required", name)
	}
	target := addr
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		target = "unix:" + path
	}
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithConnectParams(reconnect)}, opts...)
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s at %s: %w", name, addr, err)
	}
	s.Defer(name+" connection", func(context.Context) error { return conn.Close() })
	return conn, nil
}

// Verifier is the step that makes a service check bearer tokens (pass v.Authenticate as the
// gRPC server's Authenticate): checker asks auth — authn.NewGRPCChecker over a connection
// from Dial — and the verifier's cache follows the revocations auth publishes, read through
// js, until shutdown. Calls made while auth is unreachable fail with Unavailable.
func (s *Service) Verifier(checker authn.Checker, js jetstream.JetStream, o authn.Options) (*authn.Verifier, error) {
	if o.Logger == nil {
		o.Logger = s.log
	}
	v, err := authn.NewVerifier(checker, o)
	if err != nil {
		return nil, err
	}
	s.Go("token revocations", func(ctx context.Context) error {
		v.WatchRevocations(ctx, js)
		return nil
	})
	return v, nil
}

// AuthVerifier is the step by which a service checks bearer tokens with auth at addr (its
// AuthAddr setting): Dial("auth", addr), then Verifier asking auth's CheckToken over that
// connection. Pass v.Authenticate as the gRPC server's Authenticate.
func (s *Service) AuthVerifier(addr string, js jetstream.JetStream, o authn.Options) (*authn.Verifier, error) {
	conn, err := s.Dial("auth", addr)
	if err != nil {
		return nil, err
	}
	return s.Verifier(authn.NewGRPCChecker(conn, 0), js, o)
}

// credentials are n's user and the password read from its file.
func credentials(n config.NATS) (events.Credentials, error) {
	pw, err := n.NATSPassword()
	if err != nil {
		return events.Credentials{}, err
	}
	return events.Credentials{User: n.NATSUser, Password: pw}, nil
}
