// Package tlsconfig is the plugin's mutual TLS for operator mode, CloudNativePG's convention
// for TCP plugins (the Service's cnpg.io/pluginServerSecret and cnpg.io/pluginClientSecret):
// TLS 1.3 only, the server presents its certificate, and only clients presenting the client
// certificate are accepted; that certificate, self-signed, is the CA clients are verified
// against. It also writes such a pair of pairs for local use (gen-certs).
package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Files are the PEM files of the server side, as CloudNativePG's Secrets mount them.
type Files struct {
	// Cert and Key are the server's certificate (tls.crt of the server Secret) and key.
	Cert, Key string
	// ClientCA holds the certificate(s) clients must present or chain to (tls.crt of the
	// client Secret).
	ClientCA string
}

// Server loads the files and keeps them current: certificate rotation (cert-manager renews
// the Secrets in place) takes effect for the next connection, without a restart.
type Server struct {
	files Files
	log   *slog.Logger
	mu    sync.Mutex
	stamp [3]time.Time // modification times of the files last looked at
	cfg   *tls.Config
}

// NewServer loads the files once, so that a bad file fails the start, not the first call.
func NewServer(f Files, log *slog.Logger) (*Server, error) {
	if f.Cert == "" || f.Key == "" || f.ClientCA == "" {
		return nil, errors.New("tls: the server certificate, its key and the client CA are all required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{files: f, log: log}
	cfg, err := load(f)
	if err != nil {
		return nil, err
	}
	s.cfg, s.stamp = cfg, stamps(f)
	return s, nil
}

// Config is the server tls.Config to hand to the listener's credentials.
func (s *Server) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ClientAuth: tls.RequireAndVerifyClientCert,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.current(), nil
		},
	}
}

// current returns the configuration of the files, reloaded when they changed since the last
// look. A rotation caught half-written (or broken) keeps the last good files in service and
// is logged; the next change is tried again.
func (s *Server) current() *tls.Config {
	stamp := stamps(s.files)
	s.mu.Lock()
	defer s.mu.Unlock()
	if stamp == s.stamp {
		return s.cfg
	}
	s.stamp = stamp
	cfg, err := load(s.files)
	if err != nil {
		s.log.Warn("the TLS files changed but cannot be loaded; still serving the previous ones", "error", err)
		return s.cfg
	}
	s.log.Info("reloaded the TLS certificates")
	s.cfg = cfg
	return cfg
}

// stamps are the files' modification times (zero for a file that cannot be read).
func stamps(f Files) [3]time.Time {
	var t [3]time.Time
	for i, p := range []string{f.Cert, f.Key, f.ClientCA} {
		if fi, err := os.Stat(p); err == nil {
			t[i] = fi.ModTime()
		}
	}
	return t
}

func load(f Files) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("tls: server certificate %s and key %s: %w", f.Cert, f.Key, err)
	}
	pem, err := os.ReadFile(f.ClientCA)
	if err != nil {
		return nil, fmt.Errorf("tls: client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tls: client CA %s holds no PEM certificate", f.ClientCA)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
	}, nil
}
