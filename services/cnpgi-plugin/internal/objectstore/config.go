package objectstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
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
//	    encryption: {key: {env: PLINTH_CNPGI_KEY}}   # optional; 32 bytes, base64 or raw
//	  local:
//	    posix: {path: /var/lib/plinth/cnpgi}
//
// Credentials are references to an environment variable or a file, never values: the
// file may be shared and logged, the cluster JSON never carries them.
type File struct {
	DefaultStore string                 `yaml:"defaultStore"`
	Stores       map[string]StoreConfig `yaml:"stores"`
}

// StoreConfig is one named store: exactly one of S3 and POSIX.
type StoreConfig struct {
	Prefix string       `yaml:"prefix"`
	S3     *S3Config    `yaml:"s3"`
	POSIX  *POSIXConfig `yaml:"posix"`
	WAL    WALSettings  `yaml:"wal"`
	// Encryption, when set, encrypts every WAL file and base backup archive written to the
	// store (backup.info stays plaintext so that listings work without the key).
	Encryption *EncryptionConfig `yaml:"encryption"`
}

// S3Config is the file form of S3Options.
type S3Config struct {
	Endpoint        string    `yaml:"endpoint"`
	Bucket          string    `yaml:"bucket"`
	Region          string    `yaml:"region"`
	PathStyle       bool      `yaml:"pathStyle"`
	CAFile          string    `yaml:"caFile"`
	AccessKeyID     SecretRef `yaml:"accessKeyId"`
	SecretAccessKey SecretRef `yaml:"secretAccessKey"`
	SessionToken    SecretRef `yaml:"sessionToken"`
	PartSizeMiB     int       `yaml:"partSizeMiB"`
	Concurrency     int       `yaml:"concurrency"`
}

// POSIXConfig is a directory store.
type POSIXConfig struct {
	Path   string `yaml:"path"`
	NoSync bool   `yaml:"noSync"`
}

// WALSettings say how WAL is written to a store.
type WALSettings struct {
	// Compression is gzip (default, barman-compatible), zstd or none.
	Compression string `yaml:"compression"`
	// MaxParallel is how many segments one archive or restore call moves at once: the
	// requested one plus up to MaxParallel-1 others that are ready (default 1).
	MaxParallel int `yaml:"maxParallel"`
}

// SecretRef names where a secret is: an environment variable of the plugin process or a
// file (a mounted Kubernetes Secret). Exactly one is set.
type SecretRef struct {
	Env  string `yaml:"env"`
	File string `yaml:"file"`
}

func (r SecretRef) isZero() bool { return r.Env == "" && r.File == "" }

// resolve reads the secret. Errors name the reference, never the value.
func (r SecretRef) resolve(env map[string]string) (string, error) {
	switch {
	case r.Env != "" && r.File != "":
		return "", errors.New("set either env or file, not both")
	case r.Env != "":
		v := env[r.Env]
		if v == "" {
			return "", fmt.Errorf("environment variable %s is not set", r.Env)
		}
		return v, nil
	case r.File != "":
		b, err := os.ReadFile(r.File)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", r.File, err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", fmt.Errorf("%s is empty", r.File)
		}
		return v, nil
	}
	return "", errors.New("missing: give {env: NAME} or {file: PATH}")
}

// storeNameRE keeps names usable in cluster parameters, metrics labels and logs.
var storeNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$`)

// ParseFile decodes a store configuration, refusing unknown fields so that a typo
// (pathstyle for pathStyle) fails at start instead of silently changing behaviour.
func ParseFile(data []byte) (*File, error) {
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
			errs = append(errs, fmt.Errorf("defaultStore: %q is not among the stores", f.DefaultStore))
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
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("stores.%s: "+format, append([]any{name}, args...)...))
	}
	if !storeNameRE.MatchString(name) {
		add("the name must be 1-63 characters of a-z, 0-9, '.', '_' and '-', starting and ending alphanumeric")
	}
	switch {
	case (c.S3 == nil) == (c.POSIX == nil):
		add("set exactly one of s3 and posix")
	case c.S3 != nil:
		if c.S3.Bucket == "" {
			add("s3.bucket is required")
		}
		if c.S3.AccessKeyID.isZero() || c.S3.SecretAccessKey.isZero() {
			add("s3.accessKeyId and s3.secretAccessKey are required ({env: NAME} or {file: PATH})")
		}
		if c.S3.PartSizeMiB != 0 && c.S3.PartSizeMiB < 5 {
			add("s3.partSizeMiB must be at least 5 (S3's minimum part size)")
		}
	case c.POSIX != nil:
		if !strings.HasPrefix(c.POSIX.Path, "/") {
			add("posix.path must be an absolute path")
		}
	}
	if p := cleanPrefix(c.Prefix); p != "" {
		if err := ValidateKey(p); err != nil {
			add("prefix: %v", err)
		}
	}
	if !slices.Contains([]string{"", "gzip", "zstd", "none"}, c.WAL.Compression) {
		add("wal.compression must be gzip, zstd or none, not %q", c.WAL.Compression)
	}
	if c.Encryption != nil && c.Encryption.Key.isZero() {
		add("encryption.key is required ({env: NAME} or {file: PATH})")
	}
	if c.WAL.MaxParallel < 0 || c.WAL.MaxParallel > 64 {
		add("wal.maxParallel must be between 1 and 64")
	}
	return errors.Join(errs...)
}
