package ceph

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// Config says where the mgr is and how to reach it.
type Config struct {
	// URL is the dashboard's base URL (https://mgr:8443, with or without /api) or the
	// prometheus module's metrics URL (http://mgr:9283/metrics). User and password may be in
	// the URL (https://user:password@mgr:8443).
	URL string
	// User and Password log in to the dashboard; they override the URL's.
	User, Password string
	// CAFile is a PEM bundle the mgr's certificate must chain to; empty: the system's roots.
	CAFile string
	// InsecureSkipVerify accepts any certificate (a self-signed dashboard).
	InsecureSkipVerify bool
}

// IsPrometheus reports whether the URL names the prometheus module's metrics endpoint.
func (c Config) IsPrometheus() bool {
	u, err := url.Parse(c.URL)
	return err == nil && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/metrics")
}

// Source is a Ceph source: the dashboard's or the prometheus module's.
type Source interface {
	ReadCeph(ctx context.Context) (*cluster.Ceph, error)
}

// New returns the source cfg names.
func New(cfg Config) (Source, error) {
	client, err := httpClient(cfg)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("ceph: the URL must be http(s)://host[:port][/path]")
	}
	user, password := cfg.User, cfg.Password
	if u.User != nil {
		if user == "" {
			user = u.User.Username()
		}
		if p, ok := u.User.Password(); ok && password == "" {
			password = p
		}
		u.User = nil // never in a request line, an error or a log
	}
	if cfg.IsPrometheus() {
		return &Prometheus{url: u.String(), client: client}, nil
	}
	if user == "" || password == "" {
		return nil, errors.New("ceph: the dashboard needs a user and a password (in the URL or set apart)")
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/api")
	return &Dashboard{base: strings.TrimRight(u.String(), "/"), user: user, password: password, client: client}, nil
}

// httpClient trusts cfg.CAFile's roots, or anything when InsecureSkipVerify.
func httpClient(cfg Config) (*http.Client, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // the operator's explicit choice for a self-signed dashboard
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ceph: CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ceph: CA file %s holds no PEM certificate", cfg.CAFile)
		}
		t.TLSClientConfig.RootCAs = pool
	}
	// Each request is bounded by the refresh's context; this only stops a stuck connection.
	return &http.Client{Transport: t, Timeout: 2 * time.Minute}, nil
}

// maxBody bounds a response: /api/health/full is ~60 KB for one OSD and grows with the OSDs
// and pools; 64 MiB covers thousands of them.
const maxBody = 64 << 20

// readBody reads at most maxBody bytes of resp and fails beyond that.
func readBody(resp *http.Response) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxBody {
		return nil, fmt.Errorf("the response exceeds %d bytes", maxBody)
	}
	return data, nil
}

// statusError describes a refused request, quoting only a prefix of the body.
func statusError(what string, resp *http.Response, body []byte) error {
	return fmt.Errorf("%s: %s: %s", what, resp.Status, input.Quote(strings.TrimSpace(string(body))))
}
