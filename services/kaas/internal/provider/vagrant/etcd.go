package vagrant

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
)

// etcdMember is a member as etcd's v3 JSON gateway lists it.
type etcdMember struct {
	Name     string   `json:"name"`
	PeerURLs []string `json:"peerURLs"`
}

// maxMembers bounds a member list (etcd clusters have a handful).
const maxMembers = 32

// decodeMembers reads a member/list or member/add answer.
func decodeMembers(body []byte) ([]etcdMember, error) {
	var r struct {
		Members []etcdMember `json:"members"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("etcd answered something kaas cannot read: %w", err)
	}
	if len(r.Members) > maxMembers {
		return nil, fmt.Errorf("etcd lists %d members; at most %d are expected", len(r.Members), maxMembers)
	}
	for _, m := range r.Members {
		if len(m.Name) > 253 || len(m.PeerURLs) > 8 {
			return nil, errors.New("etcd listed a malformed member")
		}
		for _, u := range m.PeerURLs {
			if len(u) > 256 || !strings.HasPrefix(u, "https://") {
				return nil, errors.New("etcd listed a malformed peer URL")
			}
		}
	}
	return r.Members, nil
}

// joinEtcd adds the member name (peer https://addr:2380) to the etcd cluster served at
// existing (the running control-plane addresses), unless it is a member already, and
// returns the --initial-cluster the new member starts with. etcd grows one member at a time:
// the reconciler joins control-plane machines one after the other.
func joinEtcd(ctx context.Context, keys *pki.Cluster, existing []string, name, addr string) (string, error) {
	if len(existing) == 0 {
		return "", errors.New("no running control-plane machine to join")
	}
	client, err := etcdClient(keys)
	if err != nil {
		return "", err
	}
	peer := "https://" + net.JoinHostPort(addr, "2380")
	var lastErr error
	for _, e := range existing {
		base := "https://" + net.JoinHostPort(e, "2379") + "/v3/cluster/member/"
		members, err := etcdCall(ctx, client, base+"list", map[string]any{})
		if err != nil {
			lastErr = err
			continue
		}
		if !slices.ContainsFunc(members, func(m etcdMember) bool { return slices.Contains(m.PeerURLs, peer) }) {
			if members, err = etcdCall(ctx, client, base+"add", map[string]any{"peerURLs": []string{peer}}); err != nil {
				return "", fmt.Errorf("add etcd member %s: %w", name, err)
			}
		}
		var parts []string
		for _, m := range members {
			n := m.Name
			if slices.Contains(m.PeerURLs, peer) {
				n = name // not started yet, so etcd does not know its name
			}
			for _, u := range m.PeerURLs {
				parts = append(parts, n+"="+u)
			}
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("reach etcd: %w", lastErr)
}

func etcdClient(keys *pki.Cluster) (*http.Client, error) {
	cert, err := keys.IssueEtcd(pki.CertSpec{CommonName: "kaas", Client: true})
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(keys.EtcdCA.CertPEM)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: roots, MinVersion: tls.VersionTLS12}}}, nil
}

func etcdCall(ctx context.Context, c *http.Client, url string, body any) ([]etcdMember, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("etcd %s: %s: %.200s", url, resp.Status, data)
	}
	return decodeMembers(data)
}
