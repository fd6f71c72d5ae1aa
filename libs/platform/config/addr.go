package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/plinth-dev/plinth/libs/platform/telemetry/redact"
)

// ParseListenAddr splits a gRPC listen address into a net.Listen network and address:
// "host:port" gives ("tcp", "host:port"); "unix:///abs/path.sock" gives ("unix", "/abs/path.sock").
func ParseListenAddr(addr string) (network, address string, err error) {
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		if !filepath.IsAbs(path) {
			return "", "", fmt.Errorf("%q must be unix:///absolute/path.sock (three slashes, absolute path)", addr)
		}
		return "unix", filepath.Clean(path), nil
	}
	if err := checkTCPAddr(addr); err != nil {
		return "", "", fmt.Errorf("%q must be host:port or unix:///path (%w)", addr, err)
	}
	return "tcp", addr, nil
}

func checkListenAddr(addr string) error {
	_, _, err := ParseListenAddr(addr)
	return err
}

// checkTCPAddr accepts "host:port" and ":port" with a numeric port 0-65535.
func checkTCPAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q has port %q; want a number 0-65535", addr, port)
	}
	return nil
}

// checkDatabaseURL accepts a postgres:// URL or a libpq keyword/value string (host=... ...).
// Error texts never repeat the value: it may hold a password.
func checkDatabaseURL(s string) error {
	if !strings.Contains(s, "://") {
		if strings.Contains(s, "=") {
			return nil // keyword/value form; pgx reports its own detailed errors
		}
		return errors.New("must be a URL like postgres://user:pass@host:5432/db or a key=value DSN")
	}
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("is not a valid URL (percent-encode special characters in the password)")
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return fmt.Errorf("has scheme %q; want postgres://", u.Scheme)
	}
	return nil
}

// checkNATSURL accepts a comma-separated list of nats://, tls://, ws:// or wss:// URLs.
func checkNATSURL(s string) error {
	for _, part := range strings.Split(s, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		if err != nil || u.Host == "" {
			return errors.New("must be a URL like nats://127.0.0.1:4222 (comma-separated for several servers)")
		}
		if !slices.Contains([]string{"nats", "tls", "ws", "wss"}, u.Scheme) {
			return fmt.Errorf("has scheme %q; want nats://, tls://, ws:// or wss://", u.Scheme)
		}
	}
	return nil
}

// checkOTLPEndpoint wants a URL because its scheme decides TLS: http:// is plaintext,
// https:// uses TLS, as the OpenTelemetry exporter specification defines.
func checkOTLPEndpoint(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q must be a URL like http://127.0.0.1:4317 (https:// for TLS)", redact.Text(s))
	}
	return nil
}

func oneOf(v string, allowed ...string) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	return fmt.Errorf("%q is not one of %s", v, strings.Join(allowed, ", "))
}
