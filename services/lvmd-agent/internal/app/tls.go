package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/libs/platform/service"
)

// listenTLS is the step that binds the optional mutual-TLS port (nil without TLSAddr), so a
// bad certificate or a taken port fails the start. The port serves the same gRPC server as
// the socket: the TLS handshake happens on the listener (TLS 1.3, client certificate
// required and verified against the client CA, ALPN h2), and gRPC speaks HTTP/2 inside.
func listenTLS(s *service.Service, cfg Config) (net.Listener, error) {
	if cfg.TLSAddr == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("PLINTH_LVMD_TLS_CERT/KEY: %w", err)
	}
	pem, err := os.ReadFile(cfg.TLSClientCA)
	if err != nil {
		return nil, fmt.Errorf("PLINTH_LVMD_TLS_CLIENT_CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("PLINTH_LVMD_TLS_CLIENT_CA: %s holds no PEM certificate", cfg.TLSClientCA)
	}
	lis, err := net.Listen("tcp", cfg.TLSAddr)
	if err != nil {
		return nil, fmt.Errorf("PLINTH_LVMD_TLS_ADDR: %w", err)
	}
	s.Defer("mutual TLS port", func(context.Context) error {
		_ = lis.Close() // closed already once served; a second close changes nothing
		return nil
	})
	return tls.NewListener(lis, &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		NextProtos:   []string{"h2"},
	}), nil
}

// serveTLS is the loop serving srv's services on the TLS port too; it ends with srv's stop.
func serveTLS(srv *server.Server, lis net.Listener, log *slog.Logger) func(context.Context) error {
	return func(context.Context) error {
		log.Info("serving mutual TLS", "tls_addr", lis.Addr().String())
		return srv.GRPC().Serve(lis)
	}
}
