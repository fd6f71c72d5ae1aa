// Package kube is the Kubernetes source: the storage cluster's namespace as Rook and Koor run
// it — Deployments, the Rook custom resources (CephCluster, CephBlockPool, CephFilesystem,
// CephObjectStore), the KoorCluster and the nodes of the Ceph pods — read from informer caches
// that watches keep current.
package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// CephPodSelector selects the pods of the Ceph daemons Rook runs for a CephCluster, its file
// systems and its object stores (not the CSI plugins): their nodes are the storage nodes.
// Upstream selected only the CephCluster's (mon, mgr, OSD), missing MDS- and gateway-only nodes.
const CephPodSelector = "app.kubernetes.io/component in (cephclusters.ceph.rook.io,cephfilesystems.ceph.rook.io,cephobjectstores.ceph.rook.io)"

// The custom resources read, by kind.
var (
	rookGV      = schema.GroupVersion{Group: "ceph.rook.io", Version: "v1"}
	koorGV      = schema.GroupVersion{Group: "storage.koor.tech", Version: "v1alpha1"}
	customKinds = []string{KindCephCluster, KindCephBlockPool, KindCephFilesystem, KindCephObjectStore, kindKoorCluster}
	customGVR   = map[string]schema.GroupVersionResource{
		KindCephCluster:     rookGV.WithResource("cephclusters"),
		KindCephBlockPool:   rookGV.WithResource("cephblockpools"),
		KindCephFilesystem:  rookGV.WithResource("cephfilesystems"),
		KindCephObjectStore: rookGV.WithResource("cephobjectstores"),
		kindKoorCluster:     koorGV.WithResource("koorclusters"),
	}
)

const kindKoorCluster = "KoorCluster"

// Config says which cluster and namespace to read.
type Config struct {
	// Kubeconfig is a kubeconfig file; empty: the in-cluster service account.
	Kubeconfig string
	// REST, when set, is used instead (tests).
	REST *rest.Config
	// Namespace is the storage cluster's namespace; default rook-ceph.
	Namespace string
	// Rediscover is how often discovery is asked again for custom resources not served yet
	// (Rook or Koor installed after stats started); default 30s.
	Rediscover time.Duration
	Logger     *slog.Logger
}

// Source keeps informer caches of the namespace and builds reports from them.
type Source struct {
	ns        string
	log       *slog.Logger
	discovery discovery.DiscoveryInterface
	typed     []informers.SharedInformerFactory
	dynamic   dynamicinformer.DynamicSharedInformerFactory

	deployments appslisters.DeploymentLister
	pods        corelisters.PodLister
	nodes       corelisters.NodeLister
	synced      []cache.InformerSynced

	mu         sync.Mutex // guards custom and discovered
	custom     map[string]cache.SharedIndexInformer
	discovered time.Time
	rediscover time.Duration
	stop       <-chan struct{}
	changed    chan struct{}
}

// New connects to the cluster; Start begins watching.
func New(cfg Config) (*Source, error) {
	restCfg := cfg.REST
	if restCfg == nil {
		var err error
		if cfg.Kubeconfig != "" {
			restCfg, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
		} else {
			restCfg, err = rest.InClusterConfig()
		}
		if err != nil {
			return nil, fmt.Errorf("kubernetes: %w", err)
		}
	}
	restCfg = rest.CopyConfig(restCfg)
	restCfg.UserAgent = "plinth-stats"
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "rook-ceph"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Rediscover <= 0 {
		cfg.Rediscover = 30 * time.Second
	}
	s := &Source{ns: cfg.Namespace, log: cfg.Logger, discovery: client.Discovery(), custom: map[string]cache.SharedIndexInformer{},
		rediscover: cfg.Rediscover, changed: make(chan struct{}, 1)}
	inNS := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(cfg.Namespace))
	cephPods := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = CephPodSelector }))
	allNodes := informers.NewSharedInformerFactory(client, 0)
	s.typed = []informers.SharedInformerFactory{inNS, cephPods, allNodes}
	s.dynamic = dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, cfg.Namespace, nil)
	for _, inf := range []cache.SharedIndexInformer{inNS.Apps().V1().Deployments().Informer(),
		cephPods.Core().V1().Pods().Informer(), allNodes.Core().V1().Nodes().Informer()} {
		s.watch(inf)
		s.synced = append(s.synced, inf.HasSynced)
	}
	s.deployments = inNS.Apps().V1().Deployments().Lister()
	s.pods = cephPods.Core().V1().Pods().Lister()
	s.nodes = allNodes.Core().V1().Nodes().Lister()
	return s, nil
}

// watch makes every change of inf's objects ask for a refresh.
func (s *Source) watch(inf cache.SharedIndexInformer) {
	poke := func() {
		select {
		case s.changed <- struct{}{}:
		default: // a refresh is already asked for
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { poke() }, UpdateFunc: func(any, any) { poke() }, DeleteFunc: func(any) { poke() },
	})
}

// Changed receives after any watched object changed.
func (s *Source) Changed() <-chan struct{} { return s.changed }

// Start runs the informers until ctx ends.
func (s *Source) Start(ctx context.Context) {
	s.mu.Lock()
	s.stop = ctx.Done()
	s.mu.Unlock()
	for _, f := range s.typed {
		f.Start(ctx.Done())
	}
	s.discover()
}

// Shutdown waits for the informers' goroutines after ctx ended.
func (s *Source) Shutdown() {
	for _, f := range s.typed {
		f.Shutdown()
	}
	s.dynamic.Shutdown()
}

// errNotSynced is reported until the first list of every watched kind arrived.
var errNotSynced = errors.New("kubernetes: waiting for the first list of deployments, pods and nodes")

// discover starts informers for the custom resources the API server serves, at most every
// Config.Rediscover while some are missing.
func (s *Source) discover() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.custom) == len(customKinds) || time.Since(s.discovered) < s.rediscover || s.stop == nil {
		return
	}
	s.discovered = time.Now()
	served := map[schema.GroupVersionResource]bool{}
	for _, gv := range []schema.GroupVersion{rookGV, koorGV} {
		list, err := s.discovery.ServerResourcesForGroupVersion(gv.String())
		if err != nil {
			continue // not installed (yet)
		}
		for _, r := range list.APIResources {
			served[gv.WithResource(r.Name)] = true
		}
	}
	for _, kind := range customKinds {
		gvr := customGVR[kind]
		if _, started := s.custom[kind]; started || !served[gvr] {
			continue
		}
		inf := s.dynamic.ForResource(gvr).Informer()
		s.watch(inf)
		s.custom[kind] = inf
		s.log.Info("watching custom resources", "kind", kind, "namespace", s.ns)
	}
	s.dynamic.Start(s.stop)
}

// customObjects lists the cached objects of kind as JSON, by name; nil while its informer has
// not synced or the kind is not served.
func (s *Source) customObjects(kind string) ([][]byte, bool) {
	s.mu.Lock()
	inf, ok := s.custom[kind]
	s.mu.Unlock()
	if !ok || !inf.HasSynced() {
		return nil, false
	}
	objs := inf.GetStore().List()
	sort.Slice(objs, func(i, j int) bool {
		return objs[i].(*unstructured.Unstructured).GetName() < objs[j].(*unstructured.Unstructured).GetName()
	})
	out := make([][]byte, 0, len(objs))
	for _, o := range objs {
		if data, err := o.(*unstructured.Unstructured).MarshalJSON(); err == nil {
			out = append(out, data)
		}
	}
	return out, true
}
