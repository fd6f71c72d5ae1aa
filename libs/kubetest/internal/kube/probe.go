package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// HTTPProbe returns a ready func that GETs url and wants 200 and, when want is not empty, a
// body containing it. A nil roots trusts any server certificate: for components whose
// serving certificate the component made itself (kube-controller-manager's).
func HTTPProbe(url, bearer string, roots *x509.CertPool, want string) func(context.Context) error {
	tlsConfig := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if roots == nil {
		tlsConfig.InsecureSkipVerify = true //nolint:gosec // self-signed by the component under test, loopback only
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true}}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			return fmt.Errorf("GET %s: %s: %.200s", url, resp.Status, body)
		}
		return nil
	}
}
