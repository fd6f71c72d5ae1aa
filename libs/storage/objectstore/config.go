package objectstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/plinth-dev/plinth/libs/storage/secret"
)

// S3Config is the configuration-file form of S3Options: credentials are references to an
// environment variable or a file (secret.Ref), read by Options, never values.
//
//	s3:
//	  endpoint: https://s3.example.com   # empty: AWS
//	  bucket: pg-archive                 # must exist
//	  region: eu-west-1                  # default us-east-1
//	  pathStyle: true
//	  caFile: /etc/plinth/s3-ca.pem
//	  insecureSkipVerify: false
//	  httpProxy: http://proxy:3128       # for http:// endpoints
//	  httpsProxy: http://proxy:3128      # for https:// endpoints
//	  accessKeyId: {env: S3_ACCESS_KEY_ID}
//	  secretAccessKey: {file: /run/secrets/s3/secret}
//	  sessionToken: {env: S3_SESSION_TOKEN}
//	  partSizeMiB: 16
//	  concurrency: 4
type S3Config struct {
	Endpoint           string     `yaml:"endpoint"`
	Bucket             string     `yaml:"bucket"`
	Region             string     `yaml:"region"`
	PathStyle          bool       `yaml:"pathStyle"`
	CAFile             string     `yaml:"caFile"`
	InsecureSkipVerify bool       `yaml:"insecureSkipVerify"`
	HTTPProxy          string     `yaml:"httpProxy"`
	HTTPSProxy         string     `yaml:"httpsProxy"`
	AccessKeyID        secret.Ref `yaml:"accessKeyId"`
	SecretAccessKey    secret.Ref `yaml:"secretAccessKey"`
	SessionToken       secret.Ref `yaml:"sessionToken"`
	PartSizeMiB        int        `yaml:"partSizeMiB"`
	Concurrency        int        `yaml:"concurrency"`
}

// Validate checks the file form without reading secrets; messages start with "s3.".
func (c S3Config) Validate() error {
	var errs []error
	if c.Bucket == "" {
		errs = append(errs, errors.New("s3.bucket is required"))
	} else if err := ValidateBucket(c.Bucket); err != nil {
		errs = append(errs, fmt.Errorf("s3.bucket: %w", err))
	}
	if c.AccessKeyID.IsZero() || c.SecretAccessKey.IsZero() {
		errs = append(errs, errors.New("s3.accessKeyId and s3.secretAccessKey are required ({env: NAME} or {file: PATH})"))
	}
	if c.PartSizeMiB != 0 && c.PartSizeMiB < MinPartSize>>20 {
		errs = append(errs, errors.New("s3.partSizeMiB must be at least 5 (S3's minimum part size)"))
	}
	if c.Concurrency < 0 || c.Concurrency > 64 {
		errs = append(errs, errors.New("s3.concurrency must be between 1 and 64"))
	}
	if _, err := endpoint(c.Endpoint); err != nil {
		errs = append(errs, fmt.Errorf("s3.endpoint: %w", err))
	}
	if _, err := proxyFunc(c.HTTPProxy, c.HTTPSProxy); err != nil {
		errs = append(errs, fmt.Errorf("s3.httpProxy/httpsProxy: %w", err))
	}
	return errors.Join(errs...)
}

// Options resolves the file form into S3Options, reading the CA file and the secrets (env
// is the process environment, secret.Env(os.Environ())). Errors name the field, never a
// secret's value.
func (c *S3Config) Options(prefix string, env map[string]string) (S3Options, error) {
	o := S3Options{
		Endpoint: c.Endpoint, Bucket: c.Bucket, Prefix: prefix, Region: c.Region, PathStyle: c.PathStyle,
		InsecureSkipVerify: c.InsecureSkipVerify, HTTPProxy: c.HTTPProxy, HTTPSProxy: c.HTTPSProxy,
		PartSize: int64(c.PartSizeMiB) << 20, Concurrency: c.Concurrency,
	}
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	var errs []error
	resolve := func(field string, ref secret.Ref, dst *string) {
		if ref.IsZero() {
			return
		}
		v, err := ref.Resolve(env)
		if err != nil {
			errs = append(errs, fmt.Errorf("s3.%s: %w", field, err))
		}
		*dst = v
	}
	resolve("accessKeyId", c.AccessKeyID, &o.AccessKeyID)
	resolve("secretAccessKey", c.SecretAccessKey, &o.SecretAccessKey)
	resolve("sessionToken", c.SessionToken, &o.SessionToken)
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("s3.caFile: %w", err))
		}
		o.CAPEM = pem
	}
	return o, errors.Join(errs...)
}

// POSIXConfig is the configuration-file form of a directory store.
//
//	posix: {path: /var/lib/plinth/objects, noSync: false}
type POSIXConfig struct {
	// Path is absolute: local disk or NFS.
	Path string `yaml:"path"`
	// NoSync skips fsync: tests only.
	NoSync bool `yaml:"noSync"`
}

// Validate checks the file form; messages start with "posix.".
func (c POSIXConfig) Validate() error {
	if !filepath.IsAbs(c.Path) {
		return errors.New("posix.path must be an absolute path")
	}
	return nil
}

// Open builds the store under prefix.
func (c *POSIXConfig) Open(prefix string) (*POSIX, error) {
	return NewPOSIX(filepath.Join(c.Path, filepath.FromSlash(CleanPrefix(prefix))), c.NoSync)
}
