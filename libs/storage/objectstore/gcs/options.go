package gcs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	"cloud.google.com/go/auth/httptransport"
	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// Options configure a GCS store. At most one way to authenticate is chosen: a service
// account key (ServiceAccountKey), Google's application default credentials
// (ApplicationDefault), or none (an emulator, a public bucket). LogValue never prints the key.
type Options struct {
	// Endpoint is the JSON API's base URL without its path (an emulator's
	// http://127.0.0.1:4443); empty means Google's https://storage.googleapis.com.
	Endpoint string
	// Bucket must exist; the store never creates buckets.
	Bucket string
	// Prefix is prepended to every key ("" or "a/b").
	Prefix string
	// ServiceAccountKey is a service account's JSON key (barman's applicationCredentials).
	// Only keys of type service_account are accepted.
	ServiceAccountKey []byte
	// ApplicationDefault uses Google's application default credentials (barman's
	// gkeEnvironment): the file GOOGLE_APPLICATION_CREDENTIALS names, gcloud's well-known
	// file, or the metadata server of GKE and GCE (workload identity). The SDK reads these
	// from the process environment.
	ApplicationDefault bool
	// ChunkSize is the resumable upload's chunk in bytes (default 16 MiB, a multiple of
	// 256 KiB): the memory one Put holds, and the largest body sent as a single request.
	ChunkSize int
}

// DefaultChunkSize is the SDK's own default: an upload buffers one chunk at a time.
const DefaultChunkSize = 16 << 20

// chunkQuantum: GCS accepts resumable chunks in multiples of 256 KiB.
const chunkQuantum = 256 << 10

// LogValue prints the options without the key.
func (o Options) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("endpoint", o.Endpoint), slog.String("bucket", o.Bucket),
		slog.String("prefix", o.Prefix), slog.String("credentials", o.credentialsKind()),
		slog.Int("chunk_size", o.ChunkSize),
	)
}

func (o Options) credentialsKind() string {
	switch {
	case len(o.ServiceAccountKey) > 0:
		return "service account key"
	case o.ApplicationDefault:
		return "application default"
	}
	return "none"
}

// storageScopes: read and write objects (full control also lets an upload set ACLs the
// bucket's defaults require).
var storageScopes = []string{storage.ScopeFullControl}

// New builds the client. With a key or without credentials it does not contact Google, so a
// service starts while the store is briefly unreachable; ApplicationDefault may ask the
// metadata server whether it runs on Google Cloud (bounded by ctx and by the SDK's own
// few seconds). Errors never quote the key.
func New(ctx context.Context, o Options) (*Store, error) {
	if err := validate(o); err != nil {
		return nil, err
	}
	if o.ChunkSize == 0 {
		o.ChunkSize = DefaultChunkSize
	}
	tr := newTransport()
	creds, err := detect(ctx, o, &http.Client{Transport: tr, Timeout: time.Minute})
	if err != nil {
		return nil, err
	}
	hc, err := httptransport.NewClient(&httptransport.Options{
		BaseRoundTripper: tr, Credentials: creds, DisableAuthentication: creds == nil,
	})
	if err != nil {
		return nil, fmt.Errorf("gcs store: %w", err)
	}
	// The client is ours, authentication included: the SDK must not look for credentials.
	copts := []option.ClientOption{option.WithHTTPClient(hc), option.WithoutAuthentication()}
	if o.Endpoint != "" {
		copts = append(copts, option.WithEndpoint(strings.TrimSuffix(o.Endpoint, "/")+"/storage/v1/"))
	}
	// JSON reads: one API for every request, which every emulator serves.
	copts = append(copts, storage.WithJSONReads())
	client, err := storage.NewClient(ctx, copts...)
	if err != nil {
		return nil, fmt.Errorf("gcs store: %w", err)
	}
	return &Store{client: client, bucket: client.Bucket(o.Bucket), prefix: objectstore.CleanPrefix(o.Prefix),
		chunkSize: o.ChunkSize, describe: o.LogValue()}, nil
}

func validate(o Options) error {
	if o.Bucket == "" {
		return errors.New("gcs store: bucket is required")
	}
	if err := ValidateBucket(o.Bucket); err != nil {
		return fmt.Errorf("gcs store: %w", err)
	}
	if p := objectstore.CleanPrefix(o.Prefix); p != "" {
		if err := objectstore.ValidateKey(p); err != nil {
			return fmt.Errorf("gcs store: prefix: %w", err)
		}
	}
	if len(o.ServiceAccountKey) > 0 && o.ApplicationDefault {
		return errors.New("gcs store: give a service account key or application default credentials, not both")
	}
	if o.ChunkSize < 0 || o.ChunkSize%chunkQuantum != 0 {
		return fmt.Errorf("gcs store: chunk size %d must be a positive multiple of 256 KiB", o.ChunkSize)
	}
	return validateEndpoint(o.Endpoint)
}

func validateEndpoint(e string) error {
	if e == "" {
		return nil
	}
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Errorf("gcs store: endpoint %s must be an http:// or https:// URL without path or credentials", input.Quote(redactURL(e)))
	}
	return nil
}

// ValidateBucket checks GCS's bucket naming rules (3–63 characters per dot-separated
// name, at most 222 in all; lowercase letters, digits, -, _ and .; starting and ending
// with a letter or digit).
func ValidateBucket(b string) error {
	bad := func(why string) error { return fmt.Errorf("bucket %s: %s", input.Quote(b), why) }
	if len(b) < 3 || len(b) > 222 {
		return bad("must be 3 to 222 characters")
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return bad("may hold only lowercase letters, digits, -, _ and .")
		}
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	if !alnum(b[0]) || !alnum(b[len(b)-1]) {
		return bad("must start and end with a letter or a digit")
	}
	for part := range strings.SplitSeq(b, ".") {
		if len(part) == 0 || len(part) > 63 {
			return bad("each dot-separated part must be 1 to 63 characters")
		}
	}
	return nil
}

// detect builds the credentials; nil means unauthenticated requests. tokenClient fetches
// tokens (bounded: the SDK's default client has no timeout).
func detect(ctx context.Context, o Options, tokenClient *http.Client) (*auth.Credentials, error) {
	opts := &credentials.DetectOptions{Scopes: storageScopes, Client: tokenClient}
	switch {
	case len(o.ServiceAccountKey) > 0:
		var f struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(o.ServiceAccountKey, &f) != nil {
			return nil, errors.New("gcs store: the service account key is not JSON")
		}
		if f.Type != string(credentials.ServiceAccount) {
			// Other credential files can make the SDK run commands or fetch URLs they name.
			return nil, fmt.Errorf("gcs store: the key's type is %s, want service_account", input.Quote(f.Type))
		}
		creds, err := credentials.NewCredentialsFromJSON(credentials.ServiceAccount, o.ServiceAccountKey, opts)
		if err != nil {
			// The SDK's parse errors may quote the JSON: say only what failed.
			return nil, errors.New("gcs store: the service account key is malformed (type, client_email, private_key and token_uri are needed)")
		}
		return creds, nil
	case o.ApplicationDefault:
		// DetectDefault has no context; it returns within the metadata probe's own bound.
		type result struct {
			creds *auth.Credentials
			err   error
		}
		done := make(chan result, 1)
		go func() {
			c, err := credentials.DetectDefault(opts)
			done <- result{c, err}
		}()
		select {
		case r := <-done:
			if r.err != nil {
				return nil, fmt.Errorf("gcs store: application default credentials: %w", r.err)
			}
			return r.creds, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("gcs store: application default credentials: %w", ctx.Err())
		}
	}
	return nil, nil
}

// newTransport bounds every phase of a request except the body transfer (a multi-GiB
// object may legitimately take long; the caller's context bounds the whole call). Proxies
// come from HTTP_PROXY/HTTPS_PROXY/NO_PROXY.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: time.Minute,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   32,
	}
}

// redactURL hides a password in a URL for errors; unparsable values are hidden whole.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid)"
	}
	return u.Redacted()
}
