package azureblob

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// Store keeps objects as block blobs in one container, under Options.Prefix. Large or
// unsized bodies are staged as blocks read from the reader as it goes (BlockSize ×
// Concurrency in memory at most) and appear only when the block list is committed.
type Store struct {
	client      *container.Client
	prefix      string
	blockSize   int64
	concurrency int
	secrets     []string // values errors must never show
	describe    slog.Value
}

var _ objectstore.Store = (*Store)(nil)

// New builds the client; it does not contact the service, so a program starts even while
// its object store is briefly unreachable. Errors never quote a credential.
func New(o Options) (*Store, error) {
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("azure blob store: %w", err)
	}
	opts := &container.ClientOptions{ClientOptions: policy.ClientOptions{
		Transport: newHTTPClient(),
		Retry:     policy.RetryOptions{MaxRetries: 4},
		// Logging policy: the SDK redacts the signature already; keep its allow-lists empty.
	}}
	s := &Store{prefix: o.Prefix, blockSize: o.BlockSize, concurrency: o.Concurrency,
		secrets: []string{o.AccountKey, strings.TrimPrefix(o.SASToken, "?"), o.ConnectionString}}
	containerURL := strings.TrimRight(o.Endpoint, "/") + "/" + o.Container
	var err error
	switch {
	case o.AccountKey != "":
		var cred *azblob.SharedKeyCredential
		if cred, err = azblob.NewSharedKeyCredential(o.Account, o.AccountKey); err != nil {
			return nil, errors.New("azure blob store: the account key is not valid base64")
		}
		s.client, err = container.NewClientWithSharedKeyCredential(containerURL, cred, opts)
	case o.SASToken != "":
		s.client, err = container.NewClientWithNoCredential(containerURL+"?"+strings.TrimPrefix(o.SASToken, "?"), opts)
	case o.ConnectionString != "":
		s.client, err = container.NewClientFromConnectionString(o.ConnectionString, o.Container, opts)
		if err != nil {
			return nil, errors.New("azure blob store: the connection string is not valid (it needs AccountName and AccountKey or SharedAccessSignature, and BlobEndpoint or DefaultEndpointsProtocol)")
		}
	case o.DefaultCredential:
		var cred azcore.TokenCredential
		// The chain reads the process environment (AZURE_CLIENT_ID, AZURE_FEDERATED_TOKEN_FILE,
		// …) by design: that is where Kubernetes workload identity puts its settings.
		if cred, err = azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{
			ClientOptions: policy.ClientOptions{Transport: newHTTPClient()},
		}); err != nil {
			return nil, fmt.Errorf("azure blob store: default Azure credential: %w", err)
		}
		// Azurite accepts Azure AD tokens over plain HTTP too; Azure itself is HTTPS only.
		opts.InsecureAllowCredentialWithHTTP = strings.HasPrefix(o.Endpoint, "http://")
		s.client, err = container.NewClient(containerURL, cred, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("azure blob store: %w", s.redact(err))
	}
	if o.ConnectionString != "" {
		o.Endpoint = strings.TrimSuffix(s.client.URL(), "/"+o.Container)
		if i := strings.IndexByte(o.Endpoint, '?'); i >= 0 {
			o.Endpoint = o.Endpoint[:i] // a connection string's SAS
		}
	}
	s.describe = o.LogValue()
	return s, nil
}

// newHTTPClient bounds every phase of a request except the body transfer (a multi-GiB blob
// may legitimately take long; the caller's context bounds the whole call).
func newHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 10 * time.Second
	t.ResponseHeaderTimeout = time.Minute
	t.MaxIdleConnsPerHost = 32 // parallel blocks and uploads reuse connections
	return &http.Client{Transport: t}
}

// LogValue describes the store without credentials.
func (s *Store) LogValue() slog.Value { return s.describe }
