// Package stores is the plugin's set of named object stores, read from its configuration
// file: each an S3 bucket or POSIX directory (libs/storage/objectstore) with the WAL
// settings and the client-side encryption keys that go with it.
package stores

import (
	"github.com/plinth-dev/plinth/libs/platform/input"

	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/plinth-dev/plinth/libs/storage/compression"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/azureblob"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/gcs"
	"github.com/plinth-dev/plinth/libs/storage/secret"
)

// File is the plugin's store configuration file (YAML, or JSON, which is YAML too):
//
//	defaultStore: main            # used when a cluster names no objectStore
//	stores:
//	  main:
//	    prefix: pg                # optional, before <server>/wals/...
//	    s3:
//	      endpoint: https://s3.example.com
//	      bucket: backups
//	      region: eu-west-1
//	      pathStyle: true
//	      caFile: /etc/plinth/s3-ca.pem
//	      accessKeyId: {env: S3_ACCESS_KEY_ID}
//	      secretAccessKey: {file: /run/secrets/s3-secret}
//	    wal: {compression: gzip, maxParallel: 4}
//	    encryption: {key: {env: CNPGI_ENCRYPTION_KEY}}   # optional; 32 bytes, base64 or raw
//	  local:
//	    posix: {path: /var/lib/plinth/cnpgi}
//
// Credentials are references to an environment variable or a file, never values: the
// file may be shared and logged, the cluster JSON never carries them.
type File struct {
	DefaultStore string                 `yaml:"defaultStore"`
	Stores       map[string]StoreConfig `yaml:"stores"`
}

// StoreConfig is one named store: exactly one of S3, Azure, GCS and POSIX.
type StoreConfig struct {
	Prefix string                   `yaml:"prefix"`
	S3     *objectstore.S3Config    `yaml:"s3"`
	Azure  *azureblob.Config        `yaml:"azure"`
	GCS    *gcs.Config              `yaml:"gcs"`
	POSIX  *objectstore.POSIXConfig `yaml:"posix"`
	WAL    WALSettings              `yaml:"wal"`
	// Encryption, when set, encrypts every WAL file and base backup archive written to the
	// store (backup.info stays plaintext so that listings work without the key).
	Encryption *EncryptionConfig `yaml:"encryption"`
}

// WALSettings say how WAL is written to a store.
type WALSettings struct {
	// Compression is gzip (default, barman-compatible), zstd or none.
	Compression string `yaml:"compression"`
	// MaxParallel is how many segments one archive or restore call moves at once: the
	// requested one plus up to MaxParallel-1 others that are ready (default 1).
	MaxParallel int `yaml:"maxParallel"`
}

// EncryptionConfig is a store's optional client-side encryption: key references, never
// values, like the S3 credentials. Key encrypts what is written; objects written with any
// of PreviousKeys stay readable (key rotation).
//
//	encryption:
//	  key: {env: CNPGI_ENCRYPTION_KEY}                # 32 bytes, base64 or raw
//	  previousKeys: [{file: /run/secrets/old-key}]
type EncryptionConfig struct {
	Key          secret.Ref   `yaml:"key"`
	PreviousKeys []secret.Ref `yaml:"previousKeys"`
}

// storeNameRE keeps names usable in cluster parameters, metrics labels and logs.
var storeNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$`)

// MaxFileSize bounds the configuration file read at start.
const MaxFileSize = 1 << 20

// ParseFile decodes a store configuration, refusing unknown fields so that a typo
// (pathstyle for pathStyle) fails at start instead of silently changing behaviour.
func ParseFile(data []byte) (*File, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("store configuration: %d bytes is over the %d-byte limit", len(data), MaxFileSize)
	}
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("store configuration: %w", err)
	}
	return &f, f.Validate()
}

// Validate checks the file without touching the stores; every problem is reported at once.
func (f *File) Validate() error {
	var errs []error
	if len(f.Stores) == 0 {
		errs = append(errs, errors.New("stores: at least one store is required"))
	}
	if f.DefaultStore != "" {
		if _, ok := f.Stores[f.DefaultStore]; !ok {
			errs = append(errs, fmt.Errorf("defaultStore: %s is not among the stores", input.Quote(f.DefaultStore)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f.Stores)) {
		if err := f.Stores[name].validate(name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c StoreConfig) validate(name string) error {
	var errs []error
	shown := name
	if !storeNameRE.MatchString(name) {
		shown = input.Quote(name)
		errs = append(errs, fmt.Errorf("stores.%s: the name must be 1-63 characters of a-z, 0-9, '.', '_' and '-', starting and ending alphanumeric", shown))
	}
	add := func(err error) { errs = append(errs, fmt.Errorf("stores.%s: %w", shown, err)) }
	kinds := 0
	for _, set := range []bool{c.S3 != nil, c.Azure != nil, c.GCS != nil, c.POSIX != nil} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds != 1:
		add(errors.New("set exactly one of s3, azure, gcs and posix"))
	case c.Azure != nil:
		if err := c.Azure.Validate(); err != nil {
			add(err)
		}
	case c.GCS != nil:
		if err := c.GCS.Validate(); err != nil {
			add(err)
		}
	case c.S3 != nil:
		if err := c.S3.Validate(); err != nil {
			add(err)
		}
	case c.POSIX != nil:
		if err := c.POSIX.Validate(); err != nil {
			add(err)
		}
	}
	if p := objectstore.CleanPrefix(c.Prefix); p != "" {
		if err := objectstore.ValidateKey(p); err != nil {
			add(fmt.Errorf("prefix: %w", err))
		}
	}
	if _, err := compression.ParseWritable(c.WAL.Compression); err != nil {
		add(fmt.Errorf("wal.compression: %w", err))
	}
	if c.Encryption != nil {
		if c.Encryption.Key.IsZero() {
			add(errors.New("encryption.key is required ({env: NAME} or {file: PATH})"))
		}
		for i, ref := range c.Encryption.PreviousKeys {
			if ref.IsZero() {
				add(fmt.Errorf("encryption.previousKeys[%d] is empty ({env: NAME} or {file: PATH})", i))
			}
		}
	}
	if c.WAL.MaxParallel < 0 || c.WAL.MaxParallel > 64 {
		add(errors.New("wal.maxParallel must be between 1 and 64"))
	}
	return errors.Join(errs...)
}
