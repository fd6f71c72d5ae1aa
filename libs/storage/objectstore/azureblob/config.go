package azureblob

import (
	"errors"
	"fmt"

	"github.com/plinth-dev/plinth/libs/storage/secret"
)

// Config is the configuration-file form of Options. The credential fields carry the names
// of barman-cloud's ObjectStore azureCredentials and, as there, are references to an
// environment variable or a file (secret.Ref), read by Options, never values.
//
//	azure:
//	  container: pg-archive                   # must exist
//	  endpoint: https://acct.blob.core.windows.net   # empty: from storageAccount
//	  storageAccount: {env: AZURE_STORAGE_ACCOUNT}
//	  storageKey: {file: /run/secrets/azure/key}     # or one of:
//	  # storageSasToken: {env: AZURE_STORAGE_SAS_TOKEN}
//	  # connectionString: {env: AZURE_STORAGE_CONNECTION_STRING}
//	  # useDefaultAzureCredential: true       # inheritFromAzureAD: true means the same
//	  blockSizeMiB: 16
//	  concurrency: 4
type Config struct {
	Container                 string     `yaml:"container"`
	Endpoint                  string     `yaml:"endpoint"`
	ConnectionString          secret.Ref `yaml:"connectionString"`
	StorageAccount            secret.Ref `yaml:"storageAccount"`
	StorageKey                secret.Ref `yaml:"storageKey"`
	StorageSasToken           secret.Ref `yaml:"storageSasToken"`
	InheritFromAzureAD        bool       `yaml:"inheritFromAzureAD"`
	UseDefaultAzureCredential bool       `yaml:"useDefaultAzureCredential"`
	BlockSizeMiB              int        `yaml:"blockSizeMiB"`
	Concurrency               int        `yaml:"concurrency"`
}

// forms lists the credential forms the file names.
func (c Config) forms() []string {
	var f []string
	if !c.ConnectionString.IsZero() {
		f = append(f, "connectionString")
	}
	if !c.StorageKey.IsZero() {
		f = append(f, "storageKey")
	}
	if !c.StorageSasToken.IsZero() {
		f = append(f, "storageSasToken")
	}
	if c.InheritFromAzureAD || c.UseDefaultAzureCredential {
		f = append(f, "useDefaultAzureCredential")
	}
	return f
}

// Validate checks the file form without reading secrets; messages start with "azure.".
func (c Config) Validate() error {
	var errs []error
	if c.Container == "" {
		errs = append(errs, errors.New("azure.container is required"))
	} else if err := ValidateContainer(c.Container); err != nil {
		errs = append(errs, fmt.Errorf("azure.container: %w", err))
	}
	switch f := c.forms(); {
	case len(f) == 0:
		errs = append(errs, errors.New("azure: one credential is required: azure.connectionString, azure.storageKey, azure.storageSasToken ({env: NAME} or {file: PATH}) or azure.useDefaultAzureCredential"))
	case len(f) > 1:
		errs = append(errs, fmt.Errorf("azure: one credential only, not %v", f))
	case f[0] == "connectionString":
		if c.Endpoint != "" || !c.StorageAccount.IsZero() {
			errs = append(errs, errors.New("azure.connectionString names its endpoint and account: leave azure.endpoint and azure.storageAccount empty"))
		}
	case f[0] == "storageKey":
		if c.StorageAccount.IsZero() {
			errs = append(errs, errors.New("azure.storageKey needs azure.storageAccount"))
		}
	default:
		if c.StorageAccount.IsZero() && c.Endpoint == "" {
			errs = append(errs, fmt.Errorf("azure.%s needs azure.storageAccount or azure.endpoint", f[0]))
		}
	}
	if c.Endpoint != "" {
		if err := validateEndpoint(c.Endpoint); err != nil {
			errs = append(errs, fmt.Errorf("azure.endpoint: %w", err))
		}
	}
	if c.BlockSizeMiB != 0 && (c.BlockSizeMiB < MinBlockSize>>20 || c.BlockSizeMiB > MaxBlockSize>>20) {
		errs = append(errs, errors.New("azure.blockSizeMiB must be between 1 and 4000"))
	}
	if c.Concurrency < 0 || c.Concurrency > maxConcurrency {
		errs = append(errs, fmt.Errorf("azure.concurrency must be between 1 and %d", maxConcurrency))
	}
	return errors.Join(errs...)
}

// Options resolves the file form into Options under prefix, reading the secrets (env is the
// process environment, secret.Env(os.Environ())). Errors name the field, never a secret's
// value.
func (c *Config) Options(prefix string, env map[string]string) (Options, error) {
	o := Options{
		Container: c.Container, Endpoint: c.Endpoint, Prefix: prefix,
		DefaultCredential: c.InheritFromAzureAD || c.UseDefaultAzureCredential,
		BlockSize:         int64(c.BlockSizeMiB) << 20, Concurrency: c.Concurrency,
	}
	var errs []error
	resolve := func(field string, ref secret.Ref, dst *string) {
		if ref.IsZero() {
			return
		}
		v, err := ref.Resolve(env)
		if err != nil {
			errs = append(errs, fmt.Errorf("azure.%s: %w", field, err))
		}
		*dst = v
	}
	resolve("connectionString", c.ConnectionString, &o.ConnectionString)
	resolve("storageAccount", c.StorageAccount, &o.Account)
	resolve("storageKey", c.StorageKey, &o.AccountKey)
	resolve("storageSasToken", c.StorageSasToken, &o.SASToken)
	return o, errors.Join(errs...)
}
