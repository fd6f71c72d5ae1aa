package objectstore

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Named is one configured store with the settings that go with it.
type Named struct {
	// Name is the store's name in the configuration and in cluster parameters.
	Name string
	// Kind is "s3" or "posix".
	Kind string
	// Store holds the objects.
	Store Store
	// WAL says how WAL is written to this store; defaults applied.
	WAL WALSettings
	// Encryption is the store's client-side encryption key; nil: objects are written in
	// plaintext.
	Encryption *EncryptionKey
	// describe is a credential-free summary for logs.
	describe slog.Value
}

// LogValue describes the store without credentials.
func (n *Named) LogValue() slog.Value { return n.describe }

// Registry holds the configured stores by name.
type Registry struct {
	stores map[string]*Named
	def    string
}

// Open resolves the credential references of every store in f (environ is the process
// environment in os.Environ form) and builds the stores. Nothing is contacted yet.
func Open(f *File, environ []string) (*Registry, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	r := &Registry{stores: map[string]*Named{}, def: f.DefaultStore}
	if r.def == "" && len(f.Stores) == 1 {
		for name := range f.Stores {
			r.def = name
		}
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(f.Stores)) {
		n, err := openNamed(name, f.Stores[name], env)
		if err != nil {
			errs = append(errs, fmt.Errorf("stores.%s: %w", name, err))
			continue
		}
		r.stores[name] = n
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

func openNamed(name string, c StoreConfig, env map[string]string) (*Named, error) {
	n := &Named{Name: name, WAL: c.WAL}
	if n.WAL.Compression == "" {
		n.WAL.Compression = "gzip"
	}
	if n.WAL.MaxParallel == 0 {
		n.WAL.MaxParallel = 1
	}
	walAttrs := slog.Group("wal", "compression", n.WAL.Compression, "max_parallel", n.WAL.MaxParallel)
	encAttrs := slog.String("encryption", "off")
	if c.Encryption != nil {
		k, err := c.Encryption.loadKey(env)
		if err != nil {
			return nil, err
		}
		n.Encryption = k
		encAttrs = slog.Any("encryption", k)
	}
	if c.POSIX != nil {
		root := filepath.Join(c.POSIX.Path, filepath.FromSlash(cleanPrefix(c.Prefix)))
		st, err := NewPOSIX(root, c.POSIX.NoSync)
		if err != nil {
			return nil, err
		}
		n.Kind, n.Store = "posix", st
		n.describe = slog.GroupValue(slog.String("kind", "posix"), slog.String("path", root), walAttrs, encAttrs)
		return n, nil
	}
	o, err := c.S3.options(c.Prefix, env)
	if err != nil {
		return nil, err
	}
	st, err := NewS3(o)
	if err != nil {
		return nil, err
	}
	n.Kind, n.Store = "s3", st
	n.describe = slog.GroupValue(slog.String("kind", "s3"), slog.Any("s3", o), walAttrs, encAttrs)
	return n, nil
}

// options resolves the file form into S3Options, reading the CA and the secrets.
func (c *S3Config) options(prefix string, env map[string]string) (S3Options, error) {
	o := S3Options{
		Endpoint: c.Endpoint, Bucket: c.Bucket, Prefix: prefix, Region: c.Region, PathStyle: c.PathStyle,
		PartSize: int64(c.PartSizeMiB) << 20, Concurrency: c.Concurrency,
	}
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	var errs []error
	secret := func(field string, ref SecretRef, dst *string) {
		if ref.isZero() {
			return
		}
		v, err := ref.resolve(env)
		if err != nil {
			errs = append(errs, fmt.Errorf("s3.%s: %w", field, err))
		}
		*dst = v
	}
	secret("accessKeyId", c.AccessKeyID, &o.AccessKeyID)
	secret("secretAccessKey", c.SecretAccessKey, &o.SecretAccessKey)
	secret("sessionToken", c.SessionToken, &o.SessionToken)
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("s3.caFile: %w", err))
		}
		o.CAPEM = pem
	}
	return o, errors.Join(errs...)
}

// Get returns the store called name; "" means the default store.
func (r *Registry) Get(name string) (*Named, error) {
	if name == "" {
		if r.def == "" {
			return nil, fmt.Errorf("%w: no objectStore parameter and no defaultStore configured (stores: %s)",
				ErrUnknownStore, strings.Join(r.Names(), ", "))
		}
		name = r.def
	}
	n, ok := r.stores[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (configured: %s)", ErrUnknownStore, name, strings.Join(r.Names(), ", "))
	}
	return n, nil
}

// Names lists the configured store names, sorted.
func (r *Registry) Names() []string { return slices.Sorted(maps.Keys(r.stores)) }

// Default is the name of the default store, or "".
func (r *Registry) Default() string { return r.def }
