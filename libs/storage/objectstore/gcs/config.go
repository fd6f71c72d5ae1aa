package gcs

import (
	"errors"
	"fmt"

	"github.com/plinth-dev/plinth/libs/storage/secret"
)

// Config is the configuration-file form of Options. Its credential fields follow
// barman-cloud's ObjectStore (googleCredentials: applicationCredentials, gkeEnvironment);
// the key is a reference to an environment variable or a file (secret.Ref), read by
// Options, never a value.
//
//	gcs:
//	  bucket: pg-archive                   # must exist
//	  endpoint: http://127.0.0.1:4443      # an emulator; empty: Google
//	  googleCredentials:
//	    applicationCredentials: {file: /run/secrets/gcs/key.json}   # a service account key
//	    gkeEnvironment: false              # or true: application default credentials
//	  chunkSizeMiB: 16
type Config struct {
	Bucket            string            `yaml:"bucket"`
	Endpoint          string            `yaml:"endpoint"`
	GoogleCredentials GoogleCredentials `yaml:"googleCredentials"`
	ChunkSizeMiB      int               `yaml:"chunkSizeMiB"`
}

// GoogleCredentials chooses how the store authenticates, as barman-cloud's do: a service
// account's JSON key, or the environment's application default credentials (GKE workload
// identity, GOOGLE_APPLICATION_CREDENTIALS). Neither is allowed only with an endpoint (an
// emulator).
type GoogleCredentials struct {
	ApplicationCredentials secret.Ref `yaml:"applicationCredentials"`
	GKEEnvironment         bool       `yaml:"gkeEnvironment"`
}

// maxChunkSizeMiB bounds the memory one upload holds.
const maxChunkSizeMiB = 1024

// Validate checks the file form without reading secrets; messages start with "gcs.".
func (c Config) Validate() error {
	var errs []error
	if c.Bucket == "" {
		errs = append(errs, errors.New("gcs.bucket is required"))
	} else if err := ValidateBucket(c.Bucket); err != nil {
		errs = append(errs, fmt.Errorf("gcs.bucket: %w", err))
	}
	key, gke := !c.GoogleCredentials.ApplicationCredentials.IsZero(), c.GoogleCredentials.GKEEnvironment
	switch {
	case key && gke:
		errs = append(errs, errors.New("gcs.googleCredentials: set applicationCredentials or gkeEnvironment, not both"))
	case !key && !gke && c.Endpoint == "":
		errs = append(errs, errors.New("gcs.googleCredentials: applicationCredentials ({env: NAME} or {file: PATH}) or gkeEnvironment: true is required"))
	}
	if c.ChunkSizeMiB < 0 || c.ChunkSizeMiB > maxChunkSizeMiB {
		errs = append(errs, fmt.Errorf("gcs.chunkSizeMiB must be between 1 and %d (0: %d)", maxChunkSizeMiB, DefaultChunkSize>>20))
	}
	if err := validateEndpoint(c.Endpoint); err != nil {
		errs = append(errs, fmt.Errorf("gcs.endpoint: %w", err))
	}
	return errors.Join(errs...)
}

// Options resolves the file form into Options, reading the key (env is the process
// environment, secret.Env(os.Environ())). Errors name the field, never the key.
func (c *Config) Options(prefix string, env map[string]string) (Options, error) {
	o := Options{
		Endpoint: c.Endpoint, Bucket: c.Bucket, Prefix: prefix,
		ApplicationDefault: c.GoogleCredentials.GKEEnvironment, ChunkSize: c.ChunkSizeMiB << 20,
	}
	if ref := c.GoogleCredentials.ApplicationCredentials; !ref.IsZero() {
		v, err := ref.Resolve(env)
		if err != nil {
			return o, fmt.Errorf("gcs.googleCredentials.applicationCredentials: %w", err)
		}
		o.ServiceAccountKey = []byte(v)
	}
	return o, nil
}
