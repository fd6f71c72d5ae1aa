package mtls

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
)

// ServerFiles are the PEM files of a server end.
type ServerFiles struct {
	// Cert and Key are the server's certificate and key.
	Cert, Key string
	// ClientCA holds the certificate(s) clients must present or chain to (a self-signed
	// client certificate is its own CA).
	ClientCA string
}

// Server is a server end whose files are kept current.
type Server struct {
	r *reloader
}

// NewServer loads the files once, so that a bad file fails the start (a *FileError), not
// the first connection. log (nil: none) hears of reloads.
func NewServer(f ServerFiles, log *slog.Logger) (*Server, error) {
	if f.Cert == "" || f.Key == "" || f.ClientCA == "" {
		return nil, errors.New("tls: the server certificate, its key and the client CA are all required")
	}
	r, err := newReloader(files{cert: f.Cert, key: f.Key, ca: f.ClientCA, pairRole: ServerPair, caRole: ClientCA}, log)
	if err != nil {
		return nil, err
	}
	return &Server{r: r}, nil
}

// Config is the server's tls.Config: TLS 1.3, a client certificate required and verified,
// each connection served with the files as they are when it arrives.
func (s *Server) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ClientAuth: tls.RequireAndVerifyClientCert,
		NextProtos: alpn,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := s.r.current()
			// The whole configuration of this connection: nothing of the outer one applies.
			return &tls.Config{
				MinVersion:   tls.VersionTLS13,
				ClientAuth:   tls.RequireAndVerifyClientCert,
				NextProtos:   alpn,
				Certificates: []tls.Certificate{m.pair},
				ClientCAs:    m.roots,
			}, nil
		},
	}
}

// Listener wraps lis so that every connection it accepts speaks mutual TLS; a gRPC server
// serves it with its default (insecure) credentials, the handshake having happened below.
// The handshake runs on the connection's first read, in the goroutine gRPC gives each
// connection, within gRPC's connection timeout.
func (s *Server) Listener(lis net.Listener) net.Listener {
	return tls.NewListener(lis, s.Config())
}
