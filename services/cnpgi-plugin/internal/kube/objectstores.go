// Package kube reads what the plugin needs from the Kubernetes API: the ObjectStore
// resources (barmancloud.cnpg.io/v1) a Cluster names with barmanObjectName, and the Secrets
// they name. It holds no rules: stores.OpenObjectStore decides what a resource means.
package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

// ObjectStoreResource is plugin-barman-cloud's custom resource.
var ObjectStoreResource = schema.GroupVersionResource{Group: "barmancloud.cnpg.io", Version: "v1", Resource: "objectstores"}

// Options tune an ObjectStores source.
type Options struct {
	// Kubeconfig is a kubeconfig file; empty: the pod's service account (in-cluster).
	Kubeconfig string
	// REST, when set, is used instead (tests).
	REST *rest.Config
	// Fresh is how long a store read from the API is used without asking again: a change
	// of the ObjectStore or its Secrets is seen within it (default 10s).
	Fresh time.Duration
	// Stale is how long a store read before is still used while the API does not answer,
	// so that an API server restart does not stop archiving (default 10m).
	Stale time.Duration
	// CallTimeout bounds one API call (default 5s).
	CallTimeout time.Duration
	Logger      *slog.Logger
}

// ObjectStores implements stores.ObjectStores over the Kubernetes API. Each store is read
// when first asked for and again once it is older than Options.Fresh; its clients are built
// again only when the ObjectStore or a Secret it names changed (resourceVersions).
type ObjectStores struct {
	dyn     dynamic.Interface
	core    kubernetes.Interface
	opts    Options
	mu      sync.Mutex
	entries map[string]*entry
}

type entry struct {
	mu      sync.Mutex // one refresh at a time per ObjectStore
	named   *stores.Named
	version string   // the ObjectStore's and its Secrets' resourceVersions
	secrets []string // the Secrets it names
	read    time.Time
}

var _ stores.ObjectStores = (*ObjectStores)(nil)

// NewObjectStores connects nothing yet; it fails only on a bad configuration.
func NewObjectStores(o Options) (*ObjectStores, error) {
	if o.Fresh <= 0 {
		o.Fresh = 10 * time.Second
	}
	if o.Stale <= 0 {
		o.Stale = 10 * time.Minute
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	cfg := o.REST
	if cfg == nil {
		var err error
		if o.Kubeconfig != "" {
			cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
		} else {
			cfg, err = rest.InClusterConfig()
		}
		if err != nil {
			return nil, fmt.Errorf("kubernetes: %w", err)
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "cnpgi-plugin"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	return &ObjectStores{dyn: dyn, core: core, opts: o, entries: map[string]*entry{}}, nil
}

// ErrAPIUnreachable: the Kubernetes API did not answer and no earlier reading is recent
// enough to use.
var ErrAPIUnreachable = stores.ErrObjectStoresUnreachable

// Get returns the store of ObjectStore name in namespace.
func (s *ObjectStores) Get(ctx context.Context, namespace, name string) (*stores.Named, error) {
	key := stores.ObjectStoreName(namespace, name)
	s.mu.Lock()
	e, ok := s.entries[key]
	if !ok {
		e = &entry{}
		s.entries[key] = e
	}
	s.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.named != nil && time.Since(e.read) < s.opts.Fresh {
		return e.named, nil
	}
	named, version, secrets, err := s.read(ctx, namespace, name, e.version)
	switch {
	case err == nil:
		if named != nil { // changed (or first read): new clients
			if e.named != nil {
				s.opts.Logger.InfoContext(ctx, "ObjectStore changed: using its new configuration", "objectStore", key)
			}
			e.named, e.version, e.secrets = named, version, secrets
		}
		e.read = time.Now()
		return e.named, nil
	case errors.Is(err, ErrAPIUnreachable) && e.named != nil && time.Since(e.read) < s.opts.Stale:
		s.opts.Logger.WarnContext(ctx, "the Kubernetes API does not answer: using the ObjectStore as read before",
			"objectStore", key, "read", e.read, "error", err)
		return e.named, nil
	default:
		if !errors.Is(err, ErrAPIUnreachable) {
			e.named, e.version, e.secrets = nil, "", nil // deleted or made invalid: never used again as it was
		}
		return nil, err
	}
}

// secretsOf names the Secrets of the ObjectStore as last read (sorted).
func (s *ObjectStores) secretsOf(namespace, name string) []string {
	s.mu.Lock()
	e := s.entries[stores.ObjectStoreName(namespace, name)]
	s.mu.Unlock()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.secrets)
}

// read fetches the ObjectStore and its Secrets; named is nil when their versions equal
// known (nothing changed); secrets names the Secrets it names.
func (s *ObjectStores) read(ctx context.Context, namespace, name, known string) (named *stores.Named, version string, secrets []string, err error) {
	cctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	u, err := s.dyn.Resource(ObjectStoreResource).Namespace(namespace).Get(cctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, "", nil, s.apiErr(err, fmt.Sprintf("ObjectStore %s in namespace %s", input.Quote(name), input.Quote(namespace)))
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, "", nil, fmt.Errorf("encode ObjectStore %s: %w", name, err)
	}
	obj, err := stores.ParseObjectStore(data)
	if err != nil {
		return nil, "", nil, err
	}
	// Secrets are read once per refresh, and their versions join the ObjectStore's: a
	// rotated key is a change.
	secretData := map[string]map[string][]byte{}
	versions := map[string]string{}
	var secretErr error
	get := func(secret string) (map[string][]byte, bool, error) {
		if d, ok := secretData[secret]; ok {
			return d, true, nil
		}
		sec, err := s.core.CoreV1().Secrets(namespace).Get(cctx, secret, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, false, nil
		case err != nil:
			err = s.apiErr(err, fmt.Sprintf("Secret %s in namespace %s", input.Quote(secret), input.Quote(namespace)))
			secretErr = err
			return nil, false, err
		}
		secretData[secret], versions[secret] = sec.Data, sec.ResourceVersion
		return sec.Data, true, nil
	}
	// A first pass reads the Secrets (and finds every mistake); the version decides whether
	// the clients are built again.
	named, err = stores.OpenObjectStore(obj, get)
	if secretErr != nil {
		return nil, "", nil, secretErr
	}
	if err != nil {
		return nil, "", nil, err
	}
	var b strings.Builder
	b.WriteString(obj.Metadata.ResourceVersion)
	for _, k := range slices.Sorted(maps.Keys(versions)) {
		b.WriteString("," + k + "=" + versions[k])
	}
	secrets = slices.Sorted(maps.Keys(versions))
	if b.String() == known {
		return nil, known, secrets, nil
	}
	return named, b.String(), secrets, nil
}

// apiErr sorts an API error: a missing object is an unknown store (the user's to fix),
// forbidden is said with what RBAC must grant, anything else is the API being unreachable.
func (s *ObjectStores) apiErr(err error, what string) error {
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %s does not exist", stores.ErrUnknownStore, what)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w: the plugin may not read %s: grant get on it to its service account", stores.ErrUnknownStore, what)
	}
	return fmt.Errorf("%w: reading %s: %w", ErrAPIUnreachable, what, err)
}

var _ stores.RecoveryWindows = (*ObjectStores)(nil)

// UpdateRecoveryWindow changes server's entry of the ObjectStore's status.serverRecoveryWindow
// through the status subresource, reading the object again and retrying when another writer
// (another instance's sidecar) changed it in between, as plugin-barman-cloud does.
func (s *ObjectStores) UpdateRecoveryWindow(ctx context.Context, namespace, name, server string, set func(*stores.RecoveryWindow)) error {
	what := fmt.Sprintf("the status of ObjectStore %s in namespace %s", input.Quote(name), input.Quote(namespace))
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
		defer cancel()
		res := s.dyn.Resource(ObjectStoreResource).Namespace(namespace)
		u, err := res.Get(cctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		windows, _, err := unstructured.NestedMap(u.Object, "status", "serverRecoveryWindow")
		if err != nil {
			return &badStatusError{fmt.Errorf("%s: status.serverRecoveryWindow: %w", what, err)}
		}
		if windows == nil {
			windows = map[string]any{}
		}
		var w stores.RecoveryWindow
		if raw, ok := windows[server]; ok {
			if err := roundTrip(raw, &w); err != nil {
				return &badStatusError{fmt.Errorf("%s: status.serverRecoveryWindow.%s: %w", what, server, err)}
			}
		}
		set(&w)
		var entry map[string]any
		if err := roundTrip(w, &entry); err != nil {
			return &badStatusError{err}
		}
		windows[server] = entry
		if err := unstructured.SetNestedMap(u.Object, windows, "status", "serverRecoveryWindow"); err != nil {
			return &badStatusError{err}
		}
		_, err = res.UpdateStatus(cctx, u, metav1.UpdateOptions{FieldManager: "cnpgi-plugin"})
		return err
	})
	if bad := (*badStatusError)(nil); errors.As(err, &bad) {
		return err
	}
	return writeErr(err, "update", what, "grant update on objectstores/status to its service account")
}

// badStatusError is a status the plugin cannot read, not the API failing.
type badStatusError struct{ error }

// isAPIError reports whether the API server answered err (as opposed to not answering).
func isAPIError(err error) bool {
	var st apierrors.APIStatus
	return errors.As(err, &st)
}

// roundTrip converts in to out through JSON: status entries are plain maps in an
// unstructured object, and times take the API's RFC 3339 form.
func roundTrip(in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}
