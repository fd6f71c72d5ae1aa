package azureblob

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// Options configure a store explicitly. Exactly one credential form is set: AccountKey
// (shared key), SASToken, ConnectionString or DefaultCredential. The credentials are
// resolved values and never printed: LogValue leaves them out.
type Options struct {
	// Endpoint is the account's blob service URL: https://ACCOUNT.blob.core.windows.net, or
	// Azurite's http://HOST:PORT/devstoreaccount1. Empty: derived from Account. Without a
	// query: a SAS token goes in SASToken.
	Endpoint string
	// Account is the storage account's name (needed with AccountKey, and with SASToken or
	// DefaultCredential when Endpoint is empty).
	Account string
	// Container must exist; the store never creates containers.
	Container string
	// Prefix is prepended to every blob name ("" or "a/b").
	Prefix string
	// AccountKey is the account's shared key (base64), as barman's storageKey.
	AccountKey string
	// SASToken is a shared access signature (with or without its leading "?"), as barman's
	// storageSasToken: an account or container SAS allowing read, write, list and delete.
	SASToken string
	// ConnectionString holds the endpoint and credentials in Azure's
	// "AccountName=…;AccountKey=…;BlobEndpoint=…" form; Endpoint and Account must be empty.
	ConnectionString string
	// DefaultCredential authenticates with Azure AD through the SDK's default chain
	// (azidentity.NewDefaultAzureCredential: environment, workload identity, managed
	// identity, Azure CLI, …), as barman's useDefaultAzureCredential or inheritFromAzureAD.
	DefaultCredential bool
	// BlockSize is the size of the blocks an unsized or large body is staged in (default
	// 16 MiB, between 1 MiB and 4000 MiB). Bodies of known size up to one block go up in a
	// single Put Blob. A blob holds at most 50,000 blocks: BlockSize × 50,000 bounds an object.
	BlockSize int64
	// Concurrency is the number of blocks staged in parallel (default 4): an upload holds at
	// most BlockSize × Concurrency in memory.
	Concurrency int
}

// Default, minimum and maximum block sizes, and the default parallelism.
const (
	DefaultBlockSize   = 16 << 20
	MinBlockSize       = 1 << 20
	MaxBlockSize       = 4000 << 20 // Azure's limit for Put Block since REST version 2019-12-12
	DefaultConcurrency = 4
	maxConcurrency     = 64
)

// credential names the form Options use, for logs and errors.
func (o Options) credential() string {
	var kinds []string
	if o.AccountKey != "" {
		kinds = append(kinds, "shared key")
	}
	if o.SASToken != "" {
		kinds = append(kinds, "SAS token")
	}
	if o.ConnectionString != "" {
		kinds = append(kinds, "connection string")
	}
	if o.DefaultCredential {
		kinds = append(kinds, "default Azure credential")
	}
	return strings.Join(kinds, "+")
}

// LogValue prints the options without credentials: which form is used, never its value.
func (o Options) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("endpoint", o.Endpoint), slog.String("account", o.Account),
		slog.String("container", o.Container), slog.String("prefix", o.Prefix),
		slog.String("credential", o.credential()),
		slog.Int64("block_size", o.BlockSize), slog.Int("concurrency", o.Concurrency),
	)
}

// check validates the options and fills the defaults. Messages name the field and never
// quote a credential.
func (o *Options) check() error {
	if o.Container == "" {
		return errors.New("container is required")
	}
	if err := ValidateContainer(o.Container); err != nil {
		return err
	}
	if p := objectstore.CleanPrefix(o.Prefix); p != "" {
		if err := objectstore.ValidateKey(p); err != nil {
			return fmt.Errorf("prefix: %w", err)
		}
	}
	o.Prefix = objectstore.CleanPrefix(o.Prefix)
	switch n := strings.Count(o.credential(), "+") + 1; {
	case o.credential() == "":
		return errors.New("a credential is required: an account key, a SAS token, a connection string or the default Azure credential")
	case n > 1:
		return fmt.Errorf("one credential only, not %s", o.credential())
	}
	if o.ConnectionString != "" && (o.Endpoint != "" || o.Account != "") {
		return errors.New("a connection string names its endpoint and account: leave endpoint and account empty")
	}
	if o.AccountKey != "" && o.Account == "" {
		return errors.New("an account key needs the account's name")
	}
	if o.Account != "" {
		if err := ValidateAccount(o.Account); err != nil {
			return err
		}
	}
	if o.Endpoint != "" {
		if err := validateEndpoint(o.Endpoint); err != nil {
			return err
		}
	} else if o.ConnectionString == "" {
		if o.Account == "" {
			return errors.New("an endpoint or an account name is required")
		}
		o.Endpoint = "https://" + o.Account + ".blob.core.windows.net"
	}
	if o.BlockSize == 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.BlockSize < MinBlockSize || o.BlockSize > MaxBlockSize {
		return fmt.Errorf("block size %d must be between 1 MiB and 4000 MiB", o.BlockSize)
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Concurrency < 0 || o.Concurrency > maxConcurrency {
		return fmt.Errorf("concurrency %d must be between 1 and %d", o.Concurrency, maxConcurrency)
	}
	return nil
}

// validateEndpoint accepts an http(s) URL without user information or query: a SAS token or
// a password there would be printed wherever the endpoint is.
func validateEndpoint(e string) error {
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" {
		return errors.New("endpoint must be an http:// or https:// URL without credentials or query (a SAS token goes in its own field)")
	}
	return nil
}

// ValidateContainer checks Azure's container naming rules: 3 to 63 lowercase letters,
// digits and hyphens, starting and ending with a letter or digit, no two hyphens in a row.
func ValidateContainer(name string) error {
	bad := func() error {
		return fmt.Errorf("container %s: 3 to 63 lowercase letters, digits and single hyphens, starting and ending with a letter or digit", objectstore.Quote(name))
	}
	if len(name) < 3 || len(name) > 63 || name[0] == '-' || name[len(name)-1] == '-' || strings.Contains(name, "--") {
		return bad()
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return bad()
		}
	}
	return nil
}

// ValidateAccount checks Azure's storage account naming rules: 3 to 24 lowercase letters
// and digits.
func ValidateAccount(name string) error {
	ok := len(name) >= 3 && len(name) <= 24
	for _, r := range name {
		ok = ok && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}
	if !ok {
		return fmt.Errorf("account %s: 3 to 24 lowercase letters and digits", objectstore.Quote(name))
	}
	return nil
}
