// Package kubetest starts a real Kubernetes control plane for a test — Debian's etcd and the
// kube-apiserver (optionally kube-controller-manager and kwok) that `make tools-k8s` builds
// from the k8s.io/kubernetes module — with a throw-away PKI, installs CustomResourceDefinitions
// taken from upstream Go modules, and stops and deletes everything when the test ends.
//
//	c := kubetest.Start(t, kubetest.Options{CRDs: kubetest.RookCRDs(t)})
//	pods, err := c.Client().CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
//
// Missing binaries skip the test, or fail it under PLINTH_TEST_STRICT=1 (see testenv).
package kubetest

import (
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/libs/kubetest/internal/kube"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// DefaultVersion is the Kubernetes version Start runs when Options.Version is empty.
const DefaultVersion = "v1.33.13"

// Versions lists every Kubernetes version `make tools-k8s` builds, oldest first.
func Versions() []string { return []string{"v1.32.13", "v1.33.13"} }

// Options say what to run.
type Options struct {
	// Version selects bin/kube-apiserver-<Version> and bin/kube-controller-manager-<Version>;
	// empty means DefaultVersion.
	Version string
	// ControllerManager also runs kube-controller-manager, so Deployments get ReplicaSets
	// and Pods, namespaces get their default ServiceAccount, and so on. There is no
	// scheduler: Pods stay Pending unless they name a node (kwok runs those).
	ControllerManager bool
	// Kwok also runs kwok (see StartKwok).
	Kwok bool
	// CRDs are installed, and Established, before Start returns.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// APIServerArgs are appended to kube-apiserver's flags; a flag given twice takes the
	// later value, so these override kubetest's own.
	APIServerArgs []string
}

// Cluster is a running control plane, private to one test.
type Cluster struct {
	version    string
	dir        string
	pki        *kube.PKI
	etcdURL    string
	port       int
	extraArgs  []string
	kubeconfig []byte
	kubePath   string
	config     *rest.Config
	client     kubernetes.Interface
	dynamic    dynamic.Interface
	apiext     apiextensionsclient.Interface
	apiserver  *process
	kcm        *process
	kwok       *process
	startTook  time.Duration
}

// Start runs a control plane for this test and returns once the apiserver is ready, the CRDs
// are Established and the optional components run. Everything stops, and every file goes,
// when the test ends — whether it passed or not.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	began := time.Now()
	version := opts.Version
	if version == "" {
		version = DefaultVersion
	}
	apiserverBin, err := binary("kube-apiserver-" + version)
	if err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	etcdBin, err := findEtcd()
	if err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	// TempDir first: its removal is then the last cleanup, after every process stopped.
	c := &Cluster{version: version, dir: t.TempDir(), extraArgs: opts.APIServerArgs}
	if c.pki, err = newPKI(c.dir); err != nil {
		t.Fatal(err)
	}
	etcd, etcdURL, err := startEtcd(etcdBin, c.dir)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	etcd.stopOnCleanup(t)
	c.etcdURL = etcdURL
	if err := c.startAPIServer(apiserverBin, 0); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	c.apiserver.stopOnCleanup(t)
	if err := c.connect(); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	if len(opts.CRDs) > 0 {
		c.InstallCRDs(t, opts.CRDs...)
	}
	if opts.ControllerManager {
		c.StartControllerManager(t)
	}
	if opts.Kwok {
		c.StartKwok(t)
	}
	c.startTook = time.Since(began)
	return c
}

// Version is the Kubernetes version the apiserver runs, e.g. "v1.33.13".
func (c *Cluster) Version() string { return c.version }

// URL is the apiserver's address, https://127.0.0.1:<port>.
func (c *Cluster) URL() string { return fmt.Sprintf("https://127.0.0.1:%d", c.port) }

// Config returns a new copy of the admin's client configuration; change it freely.
func (c *Cluster) Config() *rest.Config { return rest.CopyConfig(c.config) }

// KubeconfigPath is the file holding Kubeconfig: `kubectl --kubeconfig <path> get nodes`.
func (c *Cluster) KubeconfigPath() string { return c.kubePath }

// Client is a typed clientset for the admin.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Dynamic is a dynamic client for the admin: custom resources by GroupVersionResource.
func (c *Cluster) Dynamic() dynamic.Interface { return c.dynamic }

// StartupTime is how long Start took, components and CRDs included.
func (c *Cluster) StartupTime() time.Duration { return c.startTook }
