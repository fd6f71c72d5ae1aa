package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/plinth-dev/plinth/libs/platform/mtls"
	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/libs/platform/service"
)

// listenTLS is the step that binds the optional mutual-TLS port (nil without TLSAddr), so a
// bad certificate or a taken port fails the start. The port serves the same gRPC server as
// the socket: the TLS handshake happens on the listener (TLS 1.3, client certificate
// required and verified against the client CA, ALPN h2; the files re-read when they
// change, so rotated certificates serve the next connection), and gRPC speaks HTTP/2 inside.
func listenTLS(s *service.Service, cfg Config) (net.Listener, error) {
	if cfg.TLSAddr == "" {
		return nil, nil
	}
	files := mtls.ServerFiles{Cert: cfg.TLSCert, Key: cfg.TLSKey, ClientCA: cfg.TLSClientCA}
	tlsServer, err := mtls.NewServer(files, s.Logger())
	if err != nil {
		return nil, tlsFileError(err)
	}
	lis, err := net.Listen("tcp", cfg.TLSAddr)
	if err != nil {
		return nil, fmt.Errorf("PLINTH_LVMD_TLS_ADDR: %w", err)
	}
	s.Defer("mutual TLS port", func(context.Context) error {
		_ = lis.Close() // closed already once served; a second close changes nothing
		return nil
	})
	return tlsServer.Listener(lis), nil
}

// tlsFileError names the setting of the file that cannot be used.
func tlsFileError(err error) error {
	var fe *mtls.FileError
	if !errors.As(err, &fe) {
		return fmt.Errorf("PLINTH_LVMD_TLS_*: %w", err)
	}
	if fe.Role == mtls.ClientCA {
		if errors.Is(fe.Err, mtls.ErrNoCertificate) {
			return fmt.Errorf("PLINTH_LVMD_TLS_CLIENT_CA: %s holds no PEM certificate", fe.Cert)
		}
		return fmt.Errorf("PLINTH_LVMD_TLS_CLIENT_CA: %w", fe.Err)
	}
	return fmt.Errorf("PLINTH_LVMD_TLS_CERT/KEY: %w", fe.Err)
}

// serveTLS is the loop serving srv's services on the TLS port too; it ends with srv's stop.
func serveTLS(srv *server.Server, lis net.Listener, log *slog.Logger) func(context.Context) error {
	return func(context.Context) error {
		log.Info("serving mutual TLS", "tls_addr", lis.Addr().String())
		return srv.ServeOn(lis)
	}
}
