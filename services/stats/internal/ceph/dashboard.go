package ceph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// The dashboard's REST API versions, chosen by the Accept header.
const (
	apiV1 = "application/vnd.ceph.api.v1.0+json"
	apiV2 = "application/vnd.ceph.api.v2.0+json"
)

// Dashboard reads the mgr dashboard's REST API as Koor's data-control-center does: log in
// (POST /api/auth), then GET /api/health/full with the bearer token, logging in again when the
// token is refused (it expires after 8 hours by default). It adds what upstream hard-coded:
// the RBD image count (GET /api/block/image) and the gateways' hosts and zones
// (GET /api/rgw/daemon).
type Dashboard struct {
	base           string // scheme://host[:port][/prefix], without /api
	user, password string
	client         *http.Client
	mu             sync.Mutex
	token          string
}

// ErrLoginRefused says the dashboard refused the configured user and password.
var ErrLoginRefused = errors.New("the dashboard refused the login (check the user and password)")

// ReadCeph reads the cluster's health report, its RBD image count and its gateways. The
// report is required; the other two are left unknown when the dashboard refuses them (a
// read-only user, a release without the endpoint).
func (d *Dashboard) ReadCeph(ctx context.Context) (*cluster.Ceph, error) {
	body, _, err := d.get(ctx, "/api/health/full", apiV1)
	if err != nil {
		return nil, err
	}
	c, err := DecodeHealthFull(body)
	if err != nil {
		return nil, err
	}
	if n, err := d.images(ctx); err == nil {
		c.Volumes, c.VolumesKnown = n, true
	}
	if hosts, zones, err := d.gateways(ctx); err == nil {
		c.RGWHosts, c.RGWZones = hosts, zones
	}
	return c, nil
}

// images counts RBD images: API v2 pages them and says the total in X-Total-Count (one image
// is fetched); releases before v2 list every pool with its images.
func (d *Dashboard) images(ctx context.Context) (int, error) {
	body, header, err := d.get(ctx, "/api/block/image?offset=0&limit=1", apiV2)
	if err == nil {
		if n, convErr := strconv.Atoi(header.Get("X-Total-Count")); convErr == nil && n >= 0 {
			return n, nil
		}
	}
	var unsupported *versionError
	if err != nil && !errors.As(err, &unsupported) {
		return 0, err
	}
	if body, _, err = d.get(ctx, "/api/block/image", apiV1); err != nil {
		return 0, err
	}
	var pools []struct {
		Value []json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(body, &pools); err != nil {
		return 0, fmt.Errorf("block images: %w", err)
	}
	n := 0
	for _, p := range pools {
		n += len(p.Value)
	}
	return n, nil
}

// gateways counts the hosts the radosgw daemons run on and the zones they serve.
func (d *Dashboard) gateways(ctx context.Context) (hosts, zones int, err error) {
	body, _, err := d.get(ctx, "/api/rgw/daemon", apiV1)
	if err != nil {
		return 0, 0, err
	}
	return DecodeGateways(body)
}

// DecodeGateways reads /api/rgw/daemon: the distinct hosts and zones of the gateways.
func DecodeGateways(body []byte) (hosts, zones int, err error) {
	var daemons []struct {
		Host string `json:"server_hostname"`
		Zone string `json:"zone_name"`
	}
	if err := json.Unmarshal(body, &daemons); err != nil {
		return 0, 0, fmt.Errorf("rgw daemons: %w", err)
	}
	h, z := map[string]bool{}, map[string]bool{}
	for _, dm := range daemons {
		h[dm.Host], z[dm.Zone] = true, true
	}
	return len(h), len(z), nil
}

// versionError is the dashboard refusing the API version asked for (415).
type versionError struct{ error }

// get sends an authenticated GET and returns the body of a 2xx answer. A refused token (401)
// is renewed once.
func (d *Dashboard) get(ctx context.Context, path, accept string) ([]byte, http.Header, error) {
	for attempt := 0; ; attempt++ {
		token, err := d.login(ctx, attempt > 0)
		if err != nil {
			return nil, nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.base+path, nil)
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Accept", accept)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := d.client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		body, err := readBody(resp)
		resp.Body.Close()
		switch {
		case err != nil:
			return nil, nil, fmt.Errorf("GET %s: %w", path, err)
		case resp.StatusCode == http.StatusUnauthorized && attempt == 0:
			continue
		case resp.StatusCode == http.StatusUnsupportedMediaType:
			return nil, nil, &versionError{statusError("GET "+path, resp, body)}
		case resp.StatusCode/100 != 2:
			return nil, nil, statusError("GET "+path, resp, body)
		}
		return body, resp.Header, nil
	}
}

// login returns the current token, logging in first when there is none or renew is set.
func (d *Dashboard) login(ctx context.Context, renew bool) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.token != "" && !renew {
		return d.token, nil
	}
	d.token = ""
	payload, err := json.Marshal(map[string]string{"username": d.user, "password": d.password})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.base+"/api/auth", bytes.NewReader(payload))
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", apiV1)
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := readBody(resp)
	switch {
	case err != nil:
		return "", fmt.Errorf("dashboard login: %w", err)
	case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized:
		return "", fmt.Errorf("%w: user %q: %s", ErrLoginRefused, d.user, resp.Status)
	case resp.StatusCode/100 != 2:
		return "", statusError("dashboard login", resp, body)
	}
	var auth struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(body, &auth); err != nil || auth.Token == "" {
		return "", errors.New("dashboard login: the answer holds no token")
	}
	d.token = auth.Token
	return d.token, nil
}
