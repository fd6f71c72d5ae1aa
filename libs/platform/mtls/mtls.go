// Package mtls is Plinth's one mutual TLS, for gRPC over TCP between its own processes:
// TLS 1.3 only, ALPN h2, both sides present a certificate and verify the other's, and both
// re-read their files when they change, so a rotated certificate (cert-manager renewing a
// Secret in place, a new certs volume) serves the next connection without a restart.
package mtls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
)

// alpn is what every Plinth mutual-TLS port speaks: gRPC's HTTP/2.
var alpn = []string{"h2"}

// ErrNoCertificate is the cause of a FileError for a CA file without any PEM certificate.
var ErrNoCertificate = errors.New("holds no PEM certificate")

// Role names what a file is for, in the words of an error.
type Role string

// The files an end loads: its own certificate and key, and the CA it verifies the peer with.
const (
	ServerPair Role = "server certificate"
	ClientPair Role = "client certificate"
	ClientCA   Role = "client CA"
	ServerCA   Role = "server CA"
)

// FileError is a file that cannot be used: which one, and why (Err: the os, tls or x509
// error, or ErrNoCertificate). Services wrap it with the names of their settings.
type FileError struct {
	Role Role
	// Cert and Key are the pair's files (Key empty for a CA file).
	Cert, Key string
	Err       error
}

func (e *FileError) Error() string {
	switch {
	case e.Key != "":
		return fmt.Sprintf("tls: %s %s and key %s: %v", e.Role, e.Cert, e.Key, e.Err)
	case errors.Is(e.Err, ErrNoCertificate):
		return fmt.Sprintf("tls: %s %s %v", e.Role, e.Cert, e.Err)
	default:
		return fmt.Sprintf("tls: %s: %v", e.Role, e.Err)
	}
}

// Unwrap returns the cause.
func (e *FileError) Unwrap() error { return e.Err }

// material is what one end loaded from its files: its pair and the peer's trust anchors.
type material struct {
	pair  tls.Certificate
	roots *x509.CertPool
}

// files are one end's pair and CA file; loadPair and loadCA read them.
type files struct {
	cert, key, ca    string
	pairRole, caRole Role
}

func (f files) load() (material, error) {
	pair, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		return material{}, &FileError{Role: f.pairRole, Cert: f.cert, Key: f.key, Err: err}
	}
	pem, err := os.ReadFile(f.ca)
	if err != nil {
		return material{}, &FileError{Role: f.caRole, Cert: f.ca, Err: err}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return material{}, &FileError{Role: f.caRole, Cert: f.ca, Err: ErrNoCertificate}
	}
	return material{pair: pair, roots: roots}, nil
}

// reloader keeps the material of some files current: every look stats the files and
// reloads when one changed (a new file, modification time or size). A change caught
// half-written, or a broken one, keeps the last good material in service and is logged;
// the next change is tried again.
type reloader struct {
	files files
	log   *slog.Logger
	mu    sync.Mutex
	seen  [3]os.FileInfo // of cert, key and CA when last looked at; nil: could not stat
	cur   material
}

// newReloader loads the files once, so a bad file fails the start, not the first connection.
func newReloader(f files, log *slog.Logger) (*reloader, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &reloader{files: f, log: log, seen: f.stat()}
	m, err := f.load()
	if err != nil {
		return nil, err
	}
	r.cur = m
	return r, nil
}

func (f files) stat() [3]os.FileInfo {
	var s [3]os.FileInfo
	for i, p := range []string{f.cert, f.key, f.ca} {
		if fi, err := os.Stat(p); err == nil {
			s[i] = fi
		}
	}
	return s
}

// same reports whether a and b describe the same unchanged file. Comparing the file itself
// (device and inode), not only its time, catches an atomic rename within one clock tick.
func same(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
}

// current returns the material of the files as they are now.
func (r *reloader) current() material {
	now := r.files.stat()
	r.mu.Lock()
	defer r.mu.Unlock()
	if same(now[0], r.seen[0]) && same(now[1], r.seen[1]) && same(now[2], r.seen[2]) {
		return r.cur
	}
	r.seen = now
	m, err := r.files.load()
	if err != nil {
		r.log.Warn("the TLS files changed but cannot be loaded; still serving the previous ones", "error", err)
		return r.cur
	}
	r.log.Info("reloaded the TLS certificates", "cert", r.files.cert)
	r.cur = m
	return m
}
