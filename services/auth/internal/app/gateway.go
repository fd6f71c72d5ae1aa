package app

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/mtls"
	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/libs/platform/service"
)

// validateGateway checks the gateway listener's settings: a unix socket (its 0600 mode is the
// proof: only auth's own user, the gateway's, can connect), or TCP with mutual TLS, since a
// TCP peer proves nothing by itself.
func (c *Config) validateGateway() error {
	if c.GatewayAddr == "" {
		if c.GatewayTLSCert != "" || c.GatewayTLSKey != "" || c.GatewayClientCA != "" {
			return errors.New("PLINTH_AUTH_GATEWAY_TLS_*: set without PLINTH_AUTH_GATEWAY_ADDR")
		}
		return nil
	}
	network, _, err := config.ParseListenAddr(c.GatewayAddr)
	if err != nil {
		return fmt.Errorf("PLINTH_AUTH_GATEWAY_ADDR: %w", err)
	}
	if c.GatewayAddr == c.GRPCAddr {
		return errors.New("PLINTH_AUTH_GATEWAY_ADDR: must differ from PLINTH_GRPC_ADDR (anyone may call that one)")
	}
	if network == "tcp" && (c.GatewayTLSCert == "" || c.GatewayTLSKey == "" || c.GatewayClientCA == "") {
		return errors.New("PLINTH_AUTH_GATEWAY_ADDR: a TCP address needs mutual TLS (PLINTH_AUTH_GATEWAY_TLS_CERT, _KEY and _CLIENT_CA: the gateway's identity); or use unix:///abs/path")
	}
	return nil
}

// gatewayServer builds the gateway listener's server (nil without GatewayAddr). Its calls
// are the same services; only the client address rule differs. Its metrics are the gRPC
// port's with the prefix gateway_listener_ (one registry cannot hold a name twice with
// different labels).
func gatewayServer(s *service.Service, cfg Config) (*server.Server, error) {
	if cfg.GatewayAddr == "" {
		return nil, nil
	}
	o := server.Options{Metrics: prometheus.WrapRegistererWithPrefix("gateway_listener_", s.Metrics())}
	if cfg.GatewayTLSCert != "" {
		tlsServer, err := mtls.NewServer(mtls.ServerFiles{Cert: cfg.GatewayTLSCert, Key: cfg.GatewayTLSKey, ClientCA: cfg.GatewayClientCA}, s.Logger())
		if err != nil {
			return nil, fmt.Errorf("PLINTH_AUTH_GATEWAY_TLS_*: %w", err)
		}
		o.GRPCOptions = []grpc.ServerOption{grpc.Creds(credentials.NewTLS(tlsServer.Config()))}
	}
	srv, err := s.GRPC(config.GRPC{GRPCAddr: cfg.GatewayAddr, LogCalls: cfg.LogCalls}, o)
	if err != nil {
		return nil, fmt.Errorf("PLINTH_AUTH_GATEWAY_ADDR: %w", err)
	}
	return srv, nil
}
