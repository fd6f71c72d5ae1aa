// Package kubelocal runs a real single-node Kubernetes cluster on this machine, the way
// cephlocal runs a Ceph: Debian's etcd, containerd, runc and CNI plugins, and the
// kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kube-proxy that
// `make tools-k8s` builds from the k8s.io/kubernetes module — all under one directory, on a
// bridge of their own. Up starts it in the background and returns once the node is Ready;
// Down, from the same process or another, stops everything and undoes what the components
// changed on the host (mounts, cgroups, iptables chains, sysctls, the bridge).
//
//	c, err := kubelocal.Up(ctx, kubelocal.Options{Dir: "/var/lib/plinth-kube", BinDir: "bin"})
//	defer kubelocal.Down(ctx, "/var/lib/plinth-kube", log)
//
// It needs root (cgroups, mounts, network), and cgroup v1 or v2 with every controller the
// kubelet asks for. Only one cluster per Bridge and PodCIDR can run at a time.
package kubelocal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Version is the Kubernetes version Up runs: `make tools-k8s` builds its node binaries.
const Version = "v1.33.13"

// Stand-in images every node needs; Up makes them from this machine's busybox (see images.go).
const (
	PauseImage   = "registry.k8s.io/pause:3.10"
	BusyboxImage = "docker.io/library/busybox:1.37-musl"
	// CertManagerImage holds BinDir/cert-manager-controller (Options.CertManager): not
	// upstream's image, which cannot be pulled here, so not named like it.
	CertManagerImage = "plinth.local/cert-manager-controller:v1.21.2"
	// CAInjectorImage holds BinDir/cert-manager-cainjector, cert-manager's CA injector.
	CAInjectorImage = "plinth.local/cert-manager-cainjector:v1.21.2"
)

// Options say where and how the cluster runs. The zero value of each field takes the default
// `make kube-up` uses.
type Options struct {
	// Dir holds everything: PKI, etcd's data, containerd's images, the kubelet's pods, logs and
	// the state Down reads. Default /var/lib/plinth-kube.
	Dir string
	// BinDir holds kube-apiserver-<Version> and the other components (`make tools-k8s`).
	BinDir string
	// NodeName is the Node's name. Default plinth-node.
	NodeName string
	// Bridge is the pod network's Linux bridge. Default plinthk0.
	Bridge string
	// PodCIDR is the pod network; its first address is the bridge's, where the apiserver and
	// the kubelet listen (never on an address outside this machine). Default 10.244.0.0/24.
	PodCIDR string
	// ServiceCIDR holds ClusterIPs; the first is the `kubernetes` Service's. Default 10.96.0.0/24.
	ServiceCIDR string
	// PortBase is the first of eleven ports (etcd client and peer on loopback, apiserver,
	// controller-manager, scheduler, kubelet, kubelet healthz, kube-proxy healthz and
	// metrics, CoreDNS health and readiness). Default 24440 (between the e2e tests' shifted suite
	// ports and the range libs/platform/ports picks from): the apiserver listens on 24442.
	PortBase int
	// Images are `docker save` archives imported into containerd beside the stand-ins.
	Images []string
	// Programs are images made here, each holding the static programs listed under its name
	// beside busybox (ImportProgram): upstream programs built here, which no registry serves
	// (make kube-up's S3 server, versitygw; the Kubernetes binaries of kaas's machines).
	Programs map[string][]string
	// CertManager also runs cert-manager's controller in the cluster (namespace cert-manager,
	// BinDir/cert-manager-controller from `make tools-k8s`, its CRDs from the module
	// tools/crds pins), so Issuers and Certificates work.
	CertManager bool
	// Storage also runs local-path-provisioner (BinDir/local-path-provisioner from `make
	// tools-k8s`, upstream's manifest from the module tools/crds pins) as the default
	// StorageClass, local-path: each PersistentVolumeClaim gets a directory under Dir/volumes,
	// which Down removes with the rest.
	Storage bool
	// VolumeGroup, when set, is made on a loop device over a sparse file of VolumeGroupSize
	// bytes (default 8 GiB) in Dir, for the node's lvmd-agent (overlays/local names
	// plinth_kube); Down removes it with every logical volume in it.
	VolumeGroup     string
	VolumeGroupSize int64
	// WaitForMachine is how long Up waits for another cluster on this machine to stop
	// (tests of several packages take turns); zero fails at once.
	WaitForMachine time.Duration
	// Claimed, when set, runs once Up holds the machine and before it changes anything on
	// it (a test records the host's settings there, not while another cluster runs).
	Claimed func() `json:"-"`
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any) `json:"-"`
}

func (o *Options) defaults() error {
	if o.Dir == "" {
		o.Dir = "/var/lib/plinth-kube"
	}
	if o.NodeName == "" {
		o.NodeName = "plinth-node"
	}
	if o.Bridge == "" {
		o.Bridge = "plinthk0"
	}
	if o.PodCIDR == "" {
		o.PodCIDR = "10.244.0.0/24"
	}
	if o.ServiceCIDR == "" {
		o.ServiceCIDR = "10.96.0.0/24"
	}
	if o.VolumeGroup != "" && o.VolumeGroupSize == 0 {
		o.VolumeGroupSize = 8 << 30
	}
	if o.PortBase == 0 {
		o.PortBase = 24440
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	o.Dir = dir
	if o.BinDir == "" {
		return errors.New("kubelocal: Options.BinDir is required (the directory `make tools-k8s` builds into)")
	}
	if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
		return err
	}
	for _, c := range []struct{ name, value string }{{"PodCIDR", o.PodCIDR}, {"ServiceCIDR", o.ServiceCIDR}} {
		p, err := netip.ParsePrefix(c.value)
		if err != nil || !p.Addr().Is4() || p.Bits() > 28 || p.Masked() != p {
			return fmt.Errorf("kubelocal: Options.%s %q: want an IPv4 network of at least 16 addresses, like 10.244.0.0/24", c.name, c.value)
		}
	}
	if len(o.Bridge) > 15 {
		return fmt.Errorf("kubelocal: Options.Bridge %q: at most 15 characters", o.Bridge)
	}
	return nil
}

// layout is every address, port and path derived from Options.
type layout struct {
	Options
	nodeIP, kubeSvcIP, dnsIP                                  string
	etcdPort, etcdPeerPort, apiPort, kcmPort, schedPort       int
	kubeletPort, kubeletHealthPort, proxyHealthPort, metricsP int
	dnsHealthPort, dnsReadyPort                               int
}

func newLayout(o Options) layout {
	pod := netip.MustParsePrefix(o.PodCIDR)
	svc := netip.MustParsePrefix(o.ServiceCIDR)
	nth := func(p netip.Prefix, n int) string {
		a := p.Addr()
		for range n {
			a = a.Next()
		}
		return a.String()
	}
	b := o.PortBase
	return layout{
		Options: o, nodeIP: nth(pod, 1), kubeSvcIP: nth(svc, 1), dnsIP: nth(svc, 10),
		etcdPort: b, etcdPeerPort: b + 1, apiPort: b + 2, kcmPort: b + 3, schedPort: b + 4,
		kubeletPort: b + 5, kubeletHealthPort: b + 6, proxyHealthPort: b + 7, metricsP: b + 8,
		dnsHealthPort: b + 9, dnsReadyPort: b + 10,
	}
}

func (l layout) path(elem ...string) string {
	return filepath.Join(append([]string{l.Dir}, elem...)...)
}
func (l layout) apiURL() string {
	return "https://" + net.JoinHostPort(l.nodeIP, fmt.Sprint(l.apiPort))
}
func (l layout) binary(name string) string { return filepath.Join(l.BinDir, name+"-"+Version) }
func (l layout) certManagerBinary() string { return filepath.Join(l.BinDir, "cert-manager-controller") }
func (l layout) caInjectorBinary() string  { return filepath.Join(l.BinDir, "cert-manager-cainjector") }

// Cluster is a running single-node cluster.
type Cluster struct {
	Dir            string
	KubeconfigPath string
	NodeName       string
	Client         kubernetes.Interface
	// Config is the admin's client configuration (for other clients: dynamic, CRDs).
	Config *rest.Config
	// StartupTime is how long Up took.
	StartupTime time.Duration
}

// Open returns the cluster running in dir (started by Up in this process or another).
func Open(dir string) (*Cluster, error) {
	_, l, err := loadCluster(dir, nil)
	if err != nil {
		return nil, err
	}
	client, err := adminClient(l)
	if err != nil {
		return nil, err
	}
	cfg, err := adminConfig(l)
	if err != nil {
		return nil, err
	}
	return &Cluster{Dir: l.Dir, KubeconfigPath: l.path(adminKubeconfig), NodeName: l.NodeName, Client: client, Config: cfg}, nil
}

// loadCluster reads the state of the cluster in dir and the layout it runs with; ErrNoCluster
// when there is none.
func loadCluster(dir string, log func(format string, args ...any)) (*state, layout, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, layout{}, err
	}
	st, err := loadState(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, layout{}, fmt.Errorf("%w: %s has no %s", ErrNoCluster, dir, stateFile)
	}
	if err != nil {
		return nil, layout{}, err
	}
	o := st.Options
	o.Log = log
	if err := o.defaults(); err != nil {
		return nil, layout{}, err
	}
	return st, newLayout(o), nil
}

// RestartKubelet kills the kubelet (SIGKILL, as a crash would) and starts it again, returning
// once it answers its health check; containers keep running meanwhile, as on a real node.
func (c *Cluster) RestartKubelet(ctx context.Context) error {
	st, l, err := loadCluster(c.Dir, nil)
	if err != nil {
		return err
	}
	for i, p := range st.Processes {
		if p.Name == "kubelet" {
			_ = syscall.Kill(p.Pid, syscall.SIGKILL)
			for j := 0; p.alive() && j < 100; j++ {
				time.Sleep(50 * time.Millisecond)
			}
			st.Processes = slices.Delete(st.Processes, i, i+1)
			break
		}
	}
	return startComponent(ctx, l, st, kubeletComponent(l))
}

// Check says, without changing anything, whether Up could start a cluster with opts here:
// an error wrapping ErrMissing names what to install or build.
func Check(opts Options) error {
	if err := opts.defaults(); err != nil {
		return err
	}
	return preflight(newLayout(opts))
}

// Up starts the cluster and returns once its Node is Ready, the controllers run and every
// image is imported. A cluster already in Dir is an error (Down it first). When Up fails it
// undoes what it did.
func Up(ctx context.Context, opts Options) (*Cluster, error) {
	began := time.Now()
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	l := newLayout(opts)
	if err := preflight(l); err != nil {
		return nil, err
	}
	if _, err := os.Stat(l.path(stateFile)); err == nil {
		return nil, fmt.Errorf("kubelocal: a cluster is already in %s: run Down (make kube-down) first", l.Dir)
	}
	st := &state{Options: opts, Started: time.Now()}
	st.Options.Log, st.Options.Claimed = nil, nil
	if err := claimMachine(ctx, opts.WaitForMachine, opts.Log, func() error {
		if err := os.MkdirAll(l.Dir, 0o700); err != nil {
			return fmt.Errorf("kubelocal: %w", err)
		}
		if err := st.save(l.Dir); err != nil {
			return err
		}
		return os.WriteFile(lockFile, []byte(l.Dir+"\n"), 0o644)
	}); err != nil {
		return nil, err
	}
	if opts.Claimed != nil {
		opts.Claimed()
	}
	c, err := up(ctx, l, st)
	if err != nil {
		opts.Log("kubelocal: start failed, undoing: %v", err)
		if derr := down(context.WithoutCancel(ctx), l, st); derr != nil {
			err = fmt.Errorf("%w (and undoing it: %w)", err, derr)
		}
		return nil, err
	}
	c.StartupTime = time.Since(began)
	return c, nil
}

func up(ctx context.Context, l layout, st *state) (*Cluster, error) {
	log := l.Log
	for _, d := range []string{"pki", "etcd", "logs", "kubelet", "pod-logs", "cni/net.d", "cni/ipam", "containerd", "volume-plugins"} {
		if err := os.MkdirAll(l.path(d), 0o700); err != nil {
			return nil, fmt.Errorf("kubelocal: %w", err)
		}
	}
	if err := prepareHost(l, st); err != nil {
		return nil, err
	}
	if l.VolumeGroup != "" {
		log("kubelocal: making volume group %s", l.VolumeGroup)
		if err := makeVolumeGroup(l, st); err != nil {
			return nil, err
		}
	}
	pki, err := newClusterPKI(l)
	if err != nil {
		return nil, err
	}
	if err := writeConfigs(l, pki); err != nil {
		return nil, err
	}
	for _, c := range components(l, pki) {
		log("kubelocal: starting %s", c.name)
		if err := startComponent(ctx, l, st, c); err != nil {
			return nil, err
		}
		if c.name == "kube-apiserver" {
			if err := setupAPI(ctx, l); err != nil {
				return nil, err
			}
		}
		if c.name == "containerd" {
			log("kubelocal: importing images")
			if err := importImages(ctx, l); err != nil {
				return nil, err
			}
		}
	}
	client, err := adminClient(l)
	if err != nil {
		return nil, err
	}
	log("kubelocal: waiting for node %s to be Ready", l.NodeName)
	if err := waitNodeReady(ctx, client, l.NodeName, 3*time.Minute); err != nil {
		return nil, errors.Join(err, st.logTails(l, "kubelet", "containerd"))
	}
	if err := waitServiceAccount(ctx, client, 2*time.Minute); err != nil {
		return nil, errors.Join(err, st.logTails(l, "kube-controller-manager"))
	}
	if l.CertManager {
		log("kubelocal: installing cert-manager")
		if err := installCertManager(ctx, l, client); err != nil {
			return nil, err
		}
	}
	if l.Storage {
		log("kubelocal: installing local-path-provisioner (StorageClass %s)", StorageClass)
		if err := installLocalPath(ctx, l, client); err != nil {
			return nil, errors.Join(err, st.logTails(l, "kubelet"))
		}
	}
	return Open(l.Dir)
}
