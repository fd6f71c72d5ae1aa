package stores

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/azureblob"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/gcs"
	"github.com/plinth-dev/plinth/libs/storage/secret"
)

// ObjectStore is plugin-barman-cloud's resource (barmancloud.cnpg.io/v1, kind ObjectStore)
// as far as this plugin reads it: a barman-cloud user's store definitions work unchanged.
// Fields barman-cloud passes to its Python tools as command-line arguments
// (additionalCommandArgs and friends) have no meaning here and are ignored; tags too.
type ObjectStore struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name            string `json:"name"`
		Namespace       string `json:"namespace"`
		ResourceVersion string `json:"resourceVersion"`
		Generation      int64  `json:"generation"`
	} `json:"metadata"`
	Spec struct {
		Configuration   BarmanConfiguration `json:"configuration"`
		RetentionPolicy string              `json:"retentionPolicy"`
	} `json:"spec"`
}

// ObjectStoreAPIVersion and ObjectStoreKind identify the resource.
const (
	ObjectStoreAPIVersion = "barmancloud.cnpg.io/v1"
	ObjectStoreKind       = "ObjectStore"
)

// BarmanConfiguration is barman-cloud's BarmanObjectStoreConfiguration.
type BarmanConfiguration struct {
	DestinationPath   string             `json:"destinationPath"`
	EndpointURL       string             `json:"endpointURL"`
	EndpointCA        *SecretKeySelector `json:"endpointCA"`
	ServerName        string             `json:"serverName"`
	S3Credentials     *S3Credentials     `json:"s3Credentials"`
	AzureCredentials  *AzureCredentials  `json:"azureCredentials"`
	GoogleCredentials *GoogleCredentials `json:"googleCredentials"`
	WAL               *struct {
		Compression string `json:"compression"`
		Encryption  string `json:"encryption"`
		MaxParallel int    `json:"maxParallel"`
	} `json:"wal"`
	Data *struct {
		Compression string `json:"compression"`
		Encryption  string `json:"encryption"`
		Jobs        int    `json:"jobs"`
	} `json:"data"`
}

// SecretKeySelector names one key of a Secret in the ObjectStore's namespace.
type SecretKeySelector struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// S3Credentials is barman-cloud's S3Credentials.
type S3Credentials struct {
	AccessKeyID        *SecretKeySelector `json:"accessKeyId"`
	SecretAccessKey    *SecretKeySelector `json:"secretAccessKey"`
	SessionToken       *SecretKeySelector `json:"sessionToken"`
	Region             *SecretKeySelector `json:"region"`
	InheritFromIAMRole bool               `json:"inheritFromIAMRole"`
}

// AzureCredentials is barman-cloud's AzureCredentials.
type AzureCredentials struct {
	ConnectionString           *SecretKeySelector `json:"connectionString"`
	StorageAccount             *SecretKeySelector `json:"storageAccount"`
	StorageKey                 *SecretKeySelector `json:"storageKey"`
	StorageSasToken            *SecretKeySelector `json:"storageSasToken"`
	InheritFromAzureAD         bool               `json:"inheritFromAzureAD"`
	UseDefaultAzureCredentials bool               `json:"useDefaultAzureCredentials"`
}

// GoogleCredentials is barman-cloud's GoogleCredentials.
type GoogleCredentials struct {
	ApplicationCredentials *SecretKeySelector `json:"applicationCredentials"`
	GKEEnvironment         bool               `json:"gkeEnvironment"`
}

// Secrets returns a Secret's data by name (the ObjectStore's namespace is implied), and
// whether the Secret exists.
type Secrets func(name string) (map[string][]byte, bool, error)

// ErrObjectStoresUnreachable: where ObjectStore resources are read (the Kubernetes API) does
// not answer.
var ErrObjectStoresUnreachable = errors.New("the Kubernetes API is unreachable")

// InvalidObjectStoreError: an ObjectStore resource cannot be used as it is; Err says each
// field to fix (never a secret's value).
type InvalidObjectStoreError struct {
	Name string // namespace/name
	Err  error
}

func (e *InvalidObjectStoreError) Error() string {
	return "ObjectStore " + e.Name + ": " + e.Err.Error()
}
func (e *InvalidObjectStoreError) Unwrap() error { return e.Err }

// FieldError is a problem with one field of an ObjectStore: what a user fixes.
type FieldError struct {
	Field, Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// ParseObjectStore decodes an ObjectStore resource (JSON, as the API server serves it).
func ParseObjectStore(data []byte) (*ObjectStore, error) {
	var o ObjectStore
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, fmt.Errorf("not an ObjectStore in JSON: %w", err)
	}
	if o.APIVersion != ObjectStoreAPIVersion || o.Kind != ObjectStoreKind {
		return nil, fmt.Errorf("%s %s is not a %s %s", input.Quote(o.APIVersion), input.Quote(o.Kind), ObjectStoreAPIVersion, ObjectStoreKind)
	}
	return &o, nil
}

// ObjectStoreName is the name under which an ObjectStore's store is known: unique across
// namespaces, and what logs and metrics show.
func ObjectStoreName(namespace, name string) string { return namespace + "/" + name }

// OpenObjectStore builds the store an ObjectStore describes: its destinationPath (barman's
// s3://BUCKET/PATH) with the server directories below it, its endpoint and CA, credentials
// from the Secrets it names (read through secrets, never logged), and its WAL settings.
// Every problem comes back at once, each naming the field.
func OpenObjectStore(o *ObjectStore, secrets Secrets) (*Named, error) {
	name := ObjectStoreName(o.Metadata.Namespace, o.Metadata.Name)
	cfg, env, caPEM, err := o.storeConfig(secrets)
	if err != nil {
		return nil, &InvalidObjectStoreError{Name: name, Err: err}
	}
	n, err := openNamedCA(name, cfg, env, caPEM)
	if err != nil {
		return nil, &InvalidObjectStoreError{Name: name, Err: err}
	}
	n.describe = slog.GroupValue(slog.String("objectStore", ObjectStoreName(o.Metadata.Namespace, o.Metadata.Name)), slog.Any("store", n.describe))
	return n, nil
}

// storeConfig translates the resource into the plugin's own store configuration. Secret
// values go into env under keys only this function makes, which the configuration's
// references name: openNamed reads them like any other reference. caPEM is the
// endpointCA's certificates.
func (o *ObjectStore) storeConfig(secrets Secrets) (StoreConfig, map[string]string, []byte, error) {
	c := o.Spec.Configuration
	var (
		errs []error
		cfg  StoreConfig
		env  = map[string]string{}
	)
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: "spec.configuration." + field, Message: fmt.Sprintf(format, args...)})
	}
	// ref reads one Secret key into env and returns the reference to it.
	ref := func(field string, sel *SecretKeySelector) secret.Ref {
		if sel == nil || sel.Name == "" || sel.Key == "" {
			bad(field, "name and key of a Secret are required")
			return secret.Ref{}
		}
		data, ok, err := secrets(sel.Name)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("spec.configuration.%s: reading Secret %s: %w", field, input.Quote(sel.Name), err))
			return secret.Ref{}
		case !ok:
			bad(field, "Secret %s does not exist in namespace %s", input.Quote(sel.Name), input.Quote(o.Metadata.Namespace))
			return secret.Ref{}
		}
		v, ok := data[sel.Key]
		if !ok || len(strings.TrimRight(string(v), "\r\n")) == 0 {
			bad(field, "Secret %s has no key %s (or it is empty)", input.Quote(sel.Name), input.Quote(sel.Key))
			return secret.Ref{}
		}
		k := "secret " + sel.Name + " key " + sel.Key
		env[k] = strings.TrimRight(string(v), "\r\n")
		return secret.Ref{Env: k}
	}
	if c.ServerName != "" {
		bad("serverName", "use the serverName plugin parameter in the Cluster resource, as plugin-barman-cloud asks")
	}
	u, err := url.Parse(c.DestinationPath)
	switch {
	case c.DestinationPath == "":
		bad("destinationPath", "is required")
	case err != nil || u.Host == "":
		bad("destinationPath", "%s is not a URL like s3://BUCKET/PATH", input.Quote(c.DestinationPath))
	case u.Scheme == "s3":
		if c.S3Credentials == nil {
			bad("s3Credentials", "is required for an s3:// destinationPath")
			break
		}
		s3 := &objectstore.S3Config{Bucket: u.Host, Endpoint: c.EndpointURL, PathStyle: c.EndpointURL != ""}
		cred := c.S3Credentials
		if cred.InheritFromIAMRole {
			bad("s3Credentials.inheritFromIAMRole", "is not supported yet: give accessKeyId and secretAccessKey")
		} else {
			s3.AccessKeyID = ref("s3Credentials.accessKeyId", cred.AccessKeyID)
			s3.SecretAccessKey = ref("s3Credentials.secretAccessKey", cred.SecretAccessKey)
			if cred.SessionToken != nil {
				s3.SessionToken = ref("s3Credentials.sessionToken", cred.SessionToken)
			}
		}
		if cred.Region != nil {
			if r := ref("s3Credentials.region", cred.Region); !r.IsZero() {
				s3.Region = env[r.Env]
			}
		}
		cfg.S3 = s3
		cfg.Prefix = strings.Trim(u.Path, "/")
	case u.Scheme == "http" || u.Scheme == "https":
		cfg.Azure, cfg.Prefix = o.azureConfig(u, ref, bad)
	case u.Scheme == "gs":
		g := &gcs.Config{Bucket: u.Host, Endpoint: c.EndpointURL}
		switch cred := c.GoogleCredentials; {
		case cred == nil && c.EndpointURL == "":
			bad("googleCredentials", "is required for a gs:// destinationPath")
		case cred == nil:
			// An emulator at endpointURL: no credentials.
		case cred.GKEEnvironment:
			g.GoogleCredentials.GKEEnvironment = true
		default:
			g.GoogleCredentials.ApplicationCredentials = ref("googleCredentials.applicationCredentials", cred.ApplicationCredentials)
		}
		cfg.GCS = g
		cfg.Prefix = strings.Trim(u.Path, "/")
	default:
		bad("destinationPath", "scheme %s is not one barman-cloud writes (s3://, gs://, https://ACCOUNT.blob.core.windows.net/)", input.Quote(u.Scheme))
	}
	var caPEM []byte
	if c.EndpointCA != nil && cfg.S3 == nil {
		bad("endpointCA", "is supported with s3:// destinations only")
	} else if c.EndpointCA != nil {
		if r := ref("endpointCA", c.EndpointCA); !r.IsZero() {
			caPEM = []byte(env[r.Env])
		}
	}
	if c.WAL != nil {
		switch c.WAL.Compression {
		case "", "gzip", "snappy", "lz4", "zstd":
			cfg.WAL.Compression = c.WAL.Compression
		case "bzip2", "xz":
			// Read, never written: their Go encoders are too slow for archiving. gzip is
			// what barman writes by default, and any barman reads it.
			cfg.WAL.Compression = "gzip"
		default:
			bad("wal.compression", "%s is not one of bzip2, gzip, lz4, snappy, xz, zstd", input.Quote(c.WAL.Compression))
		}
		if c.WAL.Encryption != "" {
			bad("wal.encryption", "server-side encryption %s is not supported yet; the plugin's own client-side encryption is (configuration file)", input.Quote(c.WAL.Encryption))
		}
		if c.WAL.MaxParallel < 0 || c.WAL.MaxParallel > 64 {
			bad("wal.maxParallel", "must be between 1 and 64")
		}
		cfg.WAL.MaxParallel = c.WAL.MaxParallel
	}
	if c.Data != nil && c.Data.Encryption != "" {
		bad("data.encryption", "server-side encryption %s is not supported yet", input.Quote(c.Data.Encryption))
	}
	if err := errors.Join(errs...); err != nil {
		return StoreConfig{}, nil, nil, err
	}
	if err := cfg.validate("objectstore"); err != nil {
		return StoreConfig{}, nil, nil, err
	}
	return cfg, env, caPEM, nil
}

// azureBlobDomain ends the host of Azure's own blob endpoints; any other host is an emulator
// (Azurite), addressed as barman addresses it: http://HOST:PORT/ACCOUNT/CONTAINER/PATH.
const azureBlobDomain = ".blob.core.windows.net"

// azureConfig reads an Azure destinationPath as barman-cloud does:
// https://ACCOUNT.blob.core.windows.net/CONTAINER/PATH, or for an emulator
// http://HOST:PORT/ACCOUNT/CONTAINER/PATH (which needs a connection string), and its
// azureCredentials. It returns the store and the key prefix (PATH).
func (o *ObjectStore) azureConfig(u *url.URL, ref func(string, *SecretKeySelector) secret.Ref, bad func(string, string, ...any)) (*azureblob.Config, string) {
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	a := &azureblob.Config{}
	emulated := !strings.HasSuffix(u.Host, azureBlobDomain)
	if emulated {
		if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
			bad("destinationPath", "an emulated Azure URL is http://HOST:PORT/ACCOUNT/CONTAINER[/PATH]")
			return nil, ""
		}
		a.Container, parts = parts[1], parts[2:]
	} else {
		if parts[0] == "" {
			bad("destinationPath", "an Azure URL is https://ACCOUNT.blob.core.windows.net/CONTAINER[/PATH]")
			return nil, ""
		}
		a.Container, parts = parts[0], parts[1:]
		a.Endpoint = u.Scheme + "://" + u.Host
	}
	cred := o.Spec.Configuration.AzureCredentials
	switch {
	case cred == nil:
		bad("azureCredentials", "is required for an Azure destinationPath")
	case cred.ConnectionString != nil:
		a.ConnectionString = ref("azureCredentials.connectionString", cred.ConnectionString)
	case emulated:
		bad("azureCredentials.connectionString", "is required with an emulated Azure URL (as barman-cloud requires)")
	case cred.InheritFromAzureAD || cred.UseDefaultAzureCredentials:
		a.UseDefaultAzureCredential = true
	case cred.StorageKey != nil:
		a.StorageAccount = ref("azureCredentials.storageAccount", cred.StorageAccount)
		a.StorageKey = ref("azureCredentials.storageKey", cred.StorageKey)
	case cred.StorageSasToken != nil:
		if cred.StorageAccount != nil {
			a.StorageAccount = ref("azureCredentials.storageAccount", cred.StorageAccount)
		}
		a.StorageSasToken = ref("azureCredentials.storageSasToken", cred.StorageSasToken)
	default:
		bad("azureCredentials", "give connectionString, storageAccount with storageKey or storageSasToken, or inheritFromAzureAD")
	}
	return a, strings.Join(parts, "/")
}
