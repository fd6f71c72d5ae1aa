package maas

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// APIKey is a MAAS API key: consumer key, token key and token secret.
type APIKey struct {
	Consumer, Token, Secret string
}

// ParseAPIKey reads MAAS's "consumer:token:secret" form.
func ParseAPIKey(s string) (APIKey, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return APIKey{}, errors.New("a MAAS API key is consumer:token:secret (see `maas apikey --username=...`)")
	}
	return APIKey{Consumer: parts[0], Token: parts[1], Secret: parts[2]}, nil
}

// Authorization is the OAuth 1.0 PLAINTEXT header MAAS expects: the signature is the
// consumer secret (empty for MAAS keys) and the token secret joined by "&", URL-encoded.
func (k APIKey) Authorization(nonce string, ts time.Time) string {
	params := map[string]string{
		"oauth_version":          "1.0",
		"oauth_signature_method": "PLAINTEXT",
		"oauth_consumer_key":     k.Consumer,
		"oauth_token":            k.Token,
		"oauth_signature":        "&" + k.Secret,
		"oauth_nonce":            nonce,
		"oauth_timestamp":        strconv.FormatInt(ts.Unix(), 10),
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{`realm=""`}
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf(`%s="%s"`, k, url.QueryEscape(params[k])))
	}
	return "OAuth " + strings.Join(parts, ", ")
}

// Client talks to one MAAS region's API 2.0.
type Client struct {
	base      *url.URL // ends in /api/2.0/
	key       APIKey
	http      *http.Client
	userAgent string
}

// NewClient talks to the region at baseURL (e.g. http://maas:5240/MAAS) with key;
// userAgent names this kaas replica in MAAS's logs.
func NewClient(baseURL string, key APIKey, httpClient *http.Client, userAgent string) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/") + "/api/2.0/")
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("MAAS URL %q: want http(s)://host[:port]/MAAS", baseURL)
	}
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{base: u, key: key, http: httpClient, userAgent: userAgent}, nil
}

// APIError is a MAAS answer other than 200.
type APIError struct {
	Op     string
	Status int
	Body   string // a short prefix of MAAS's message
}

func (e *APIError) Error() string {
	return fmt.Sprintf("MAAS %s: %d %s: %s", e.Op, e.Status, http.StatusText(e.Status), e.Body)
}

// IsStatus reports a MAAS answer with HTTP status code.
func IsStatus(err error, code int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == code
}

// Machines lists machines matching filter (MAAS's read filters: agent_name, hostname, id...).
func (c *Client) Machines(ctx context.Context, filter url.Values) ([]Machine, error) {
	body, err := c.do(ctx, http.MethodGet, "machines/", filter, nil, "list machines")
	if err != nil {
		return nil, err
	}
	return DecodeMachines(body)
}

// Machine reads one machine.
func (c *Client) Machine(ctx context.Context, systemID string) (Machine, error) {
	body, err := c.do(ctx, http.MethodGet, "machines/"+url.PathEscape(systemID)+"/", nil, nil, "read machine "+systemID)
	if err != nil {
		return Machine{}, err
	}
	return DecodeMachine(body)
}

// Allocate takes a Ready machine matching params (tags, pool, zone, system_id, agent_name,
// comment); MAAS answers 409 when none matches.
func (c *Client) Allocate(ctx context.Context, params url.Values) (Machine, error) {
	return c.post(ctx, "machines/", "allocate", params, "allocate a machine")
}

// Deploy installs an allocated machine; params carry user_data (base64) and distro_series.
func (c *Client) Deploy(ctx context.Context, systemID string, params url.Values) (Machine, error) {
	return c.post(ctx, "machines/"+url.PathEscape(systemID)+"/", "deploy", params, "deploy machine "+systemID)
}

// Release gives a machine back to MAAS's pool of Ready machines.
func (c *Client) Release(ctx context.Context, systemID string, params url.Values) (Machine, error) {
	return c.post(ctx, "machines/"+url.PathEscape(systemID)+"/", "release", params, "release machine "+systemID)
}

func (c *Client) post(ctx context.Context, path, op string, params url.Values, what string) (Machine, error) {
	// MAAS takes POST parameters as multipart/form-data, one part per parameter.
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, k := range sortedKeys(params) {
		for _, v := range params[k] {
			if err := w.WriteField(k, v); err != nil {
				return Machine{}, err
			}
		}
	}
	if err := w.Close(); err != nil {
		return Machine{}, err
	}
	body, err := c.do(ctx, http.MethodPost, path, url.Values{"op": {op}}, &form{body: buf.Bytes(), contentType: w.FormDataContentType()}, what)
	if err != nil {
		return Machine{}, err
	}
	return DecodeMachine(body)
}

type form struct {
	body        []byte
	contentType string
}

func (c *Client) do(ctx context.Context, method, path string, query url.Values, f *form, what string) ([]byte, error) {
	u := c.base.JoinPath(path)
	u.Path = strings.TrimRight(u.Path, "/") + "/" // MAAS's resource URIs end in a slash
	u.RawQuery = query.Encode()
	var body io.Reader
	if f != nil {
		body = bytes.NewReader(f.body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if f != nil {
		req.Header.Set("Content-Type", f.contentType)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Authorization", c.key.Authorization(nonce(), time.Now()))
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("MAAS %s: %w", what, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("MAAS %s: read the answer: %w", what, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &APIError{Op: what, Status: resp.StatusCode, Body: input.Truncate(strings.TrimSpace(string(data)), 200)}
	}
	if len(data) > maxResponse {
		return nil, fmt.Errorf("MAAS %s: the answer exceeds %d bytes", what, maxResponse)
	}
	return data, nil
}

func nonce() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func sortedKeys(v url.Values) []string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
