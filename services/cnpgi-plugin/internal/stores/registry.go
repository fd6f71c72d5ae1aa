package stores

import (
	"github.com/plinth-dev/plinth/libs/platform/input"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/storage/encryption"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/azureblob"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/gcs"
	"github.com/plinth-dev/plinth/libs/storage/secret"
)

// ErrUnknownStore: no store with that name is configured.
var ErrUnknownStore = errors.New("unknown object store")

// Named is one configured store with the settings that go with it.
type Named struct {
	// Name is the store's name in the configuration and in cluster parameters.
	Name string
	// Kind is "s3", "azure", "gcs" or "posix".
	Kind string
	// Store holds the objects.
	Store objectstore.Store
	// WAL says how WAL is written to this store; defaults applied.
	WAL WALSettings
	// Encryption is the key the store writes with; nil: objects are written in plaintext.
	Encryption *encryption.Key
	// PreviousKeys read objects written before the key was rotated.
	PreviousKeys []*encryption.Key
	// describe is a credential-free summary for logs.
	describe slog.Value
}

// LogValue describes the store without credentials.
func (n *Named) LogValue() slog.Value { return n.describe }

// Registry holds the configured stores by name.
type Registry struct {
	stores  map[string]*Named
	def     string
	objects ObjectStores
}

// ObjectStores finds the stores of ObjectStore resources (barmancloud.cnpg.io/v1): the
// Kubernetes API when the plugin runs in a cluster (internal/kube), none elsewhere.
type ObjectStores interface {
	// Get returns the store of ObjectStore name in namespace; ErrUnknownStore when there is
	// no such resource.
	Get(ctx context.Context, namespace, name string) (*Named, error)
}

// SetObjectStores makes the registry resolve barmanObjectName parameters through s.
func (r *Registry) SetObjectStores(s ObjectStores) { r.objects = s }

// Lookup is the store a cluster's parameters name: the ObjectStore resource barmanObject in
// namespace when set, else the configured store name ("" for the default).
func (r *Registry) Lookup(ctx context.Context, namespace, barmanObject, name string) (*Named, error) {
	if barmanObject != "" {
		return r.ObjectStore(ctx, namespace, barmanObject)
	}
	return r.Get(name)
}

// ObjectStore returns the store of the ObjectStore resource name in namespace.
func (r *Registry) ObjectStore(ctx context.Context, namespace, name string) (*Named, error) {
	if r.objects == nil {
		return nil, fmt.Errorf("%w: barmanObjectName %s names an ObjectStore resource, and this plugin does not read them "+
			"(with PLINTH_CNPGI_KUBE_IN_CLUSTER or PLINTH_CNPGI_KUBECONFIG); use objectStore with a store of its configuration (%s)",
			ErrUnknownStore, input.Quote(name), strings.Join(r.Names(), ", "))
	}
	return r.objects.Get(ctx, namespace, name)
}

// Open resolves the credential references of every store in f (environ is the process
// environment in os.Environ form) and builds the stores. Nothing is contacted yet.
func Open(f *File, environ []string) (*Registry, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	env := secret.Env(environ)
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
	return openNamedCA(name, c, env, nil)
}

// openNamedCA is openNamed with extra CA certificates (PEM) for an S3 endpoint, besides the
// configuration's caFile: an ObjectStore's endpointCA comes from a Secret, not a file.
func openNamedCA(name string, c StoreConfig, env map[string]string, caPEM []byte) (*Named, error) {
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
		if err := n.loadKeys(c.Encryption, env); err != nil {
			return nil, err
		}
		encAttrs = slog.Any("encryption", n.Encryption)
	}
	if c.POSIX != nil {
		st, err := c.POSIX.Open(c.Prefix)
		if err != nil {
			return nil, err
		}
		n.Kind, n.Store = "posix", st
		n.describe = slog.GroupValue(slog.String("kind", "posix"), slog.String("path", st.Root()), walAttrs, encAttrs)
		return n, nil
	}
	if c.Azure != nil {
		o, err := c.Azure.Options(c.Prefix, env)
		if err != nil {
			return nil, err
		}
		st, err := azureblob.New(o)
		if err != nil {
			return nil, err
		}
		n.Kind, n.Store = "azure", st
		n.describe = slog.GroupValue(slog.String("kind", "azure"), slog.Any("azure", o), walAttrs, encAttrs)
		return n, nil
	}
	if c.GCS != nil {
		o, err := c.GCS.Options(c.Prefix, env)
		if err != nil {
			return nil, err
		}
		// Nothing is contacted: with application default credentials only their sources
		// (a file, the metadata server) are found, within this bound.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st, err := gcs.New(ctx, o)
		if err != nil {
			return nil, err
		}
		n.Kind, n.Store = "gcs", st
		n.describe = slog.GroupValue(slog.String("kind", "gcs"), slog.Any("gcs", o), walAttrs, encAttrs)
		return n, nil
	}
	o, err := c.S3.Options(c.Prefix, env)
	if err != nil {
		return nil, err
	}
	o.CAPEM = append(o.CAPEM, caPEM...)
	st, err := objectstore.NewS3(o)
	if err != nil {
		return nil, err
	}
	n.Kind, n.Store = "s3", st
	n.describe = slog.GroupValue(slog.String("kind", "s3"), slog.Any("s3", o), walAttrs, encAttrs)
	return n, nil
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
		return nil, fmt.Errorf("%w %s (configured: %s)", ErrUnknownStore, input.Quote(name), strings.Join(r.Names(), ", "))
	}
	return n, nil
}

// Names lists the configured store names, sorted.
func (r *Registry) Names() []string { return slices.Sorted(maps.Keys(r.stores)) }

// Default is the name of the default store, or "".
func (r *Registry) Default() string { return r.def }
