package kubelocal

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/plinth-dev/plinth/libs/kubetest/internal/kube"
)

// The identities of the cluster's clients, each with a bearer token; RBAC's bootstrap
// bindings and the Node authorizer grant each what kubeadm's clusters grant it.
const (
	adminUser     = "plinth-admin"
	kcmUser       = "system:kube-controller-manager"
	schedulerUser = "system:kube-scheduler"
	proxyUser     = "system:kube-proxy"
	corednsUser   = "system:coredns"

	adminKubeconfig = "kubeconfig"
	serviceIssuer   = "https://kubernetes.default.svc.cluster.local"
	containerdSock  = "containerd/containerd.sock"
)

func nodeUser(l layout) string { return "system:node:" + l.NodeName }

func newClusterPKI(l layout) (*kube.PKI, error) {
	return kube.NewPKI(kube.PKIOptions{
		Dir:    l.path("pki"),
		CAName: "plinth-kube-ca",
		ServingIPs: []net.IP{net.ParseIP(l.nodeIP), net.ParseIP(l.kubeSvcIP),
			net.IPv4(127, 0, 0, 1)},
		Users: []kube.User{
			{Name: adminUser, Groups: []string{"system:masters"}},
			{Name: kcmUser},
			{Name: schedulerUser},
			{Name: proxyUser},
			{Name: corednsUser},
			{Name: nodeUser(l), Groups: []string{"system:nodes"}},
		},
		KubeletClient: true,
		Validity:      365 * 24 * time.Hour,
	})
}

// writeConfigs writes every component's kubeconfig and configuration file.
func writeConfigs(l layout, pki *kube.PKI) error {
	for file, user := range map[string]string{
		adminKubeconfig:               adminUser,
		"pki/controller-manager.conf": kcmUser,
		"pki/scheduler.conf":          schedulerUser,
		"pki/kube-proxy.conf":         proxyUser,
		"pki/coredns.conf":            corednsUser,
		"pki/kubelet.conf":            nodeUser(l),
	} {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["plinth"] = &clientcmdapi.Cluster{Server: l.apiURL(), CertificateAuthorityData: pki.CAPEM}
		cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: pki.Tokens[user]}
		cfg.Contexts["plinth"] = &clientcmdapi.Context{Cluster: "plinth", AuthInfo: user}
		cfg.CurrentContext = "plinth"
		if err := clientcmd.WriteToFile(*cfg, l.path(file)); err != nil {
			return fmt.Errorf("kubelocal: %s: %w", file, err)
		}
	}
	files := map[string]string{
		"containerd/config.toml":       containerdConfig(l),
		"cni/net.d/10-plinth.conflist": cniConfig(l),
		"kubelet/config.yaml":          kubeletConfig(l, pki),
		"kube-proxy.yaml":              kubeProxyConfig(l),
		"Corefile":                     corefile(l),
	}
	for name, content := range files {
		if err := os.WriteFile(l.path(name), []byte(content), 0o600); err != nil {
			return fmt.Errorf("kubelocal: %w", err)
		}
	}
	return nil
}

// containerdConfig: a containerd of its own (not Docker's), everything under Dir. Root here
// may lack CAP_SYS_RESOURCE, so containers' oom_score_adj is never set below containerd's.
func containerdConfig(l layout) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[7]q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
`, l.path("containerd/root"), l.path("containerd/state"), l.path(containerdSock), l.path(containerdSock+".ttrpc"),
		l.path("containerd/opt"), PauseImage, l.path("cni/net.d"))
}

// cniConfig: pods on the bridge with addresses from PodCIDR; no masquerading (pods talk only
// to each other and to this machine), hairpin so a pod reaches itself through its Service.
func cniConfig(l layout) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "plinth",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q, "gateway": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    }
  ]
}
`, l.Bridge, l.PodCIDR, l.nodeIP, l.path("cni/ipam"))
}

// kubeletConfig: cgroupfs under a cgroup of its own (Down removes it), listening on the
// bridge's address; only the apiserver (the one holder of a client certificate from the
// cluster's CA) may call it.
func kubeletConfig(l layout, pki *kube.PKI) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %q}
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: unix://%s
cgroupDriver: cgroupfs
cgroupRoot: /%s
clusterDNS: [%s]
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
failSwapOn: false
podLogsDir: %q
volumePluginDir: %q
staticPodPath: ""
serializeImagePulls: false
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
`, l.nodeIP, l.kubeletPort, l.kubeletHealthPort, pki.CAFile, l.path(containerdSock), cgroupName(l),
		l.dnsIP, l.path("pod-logs"), l.path("volume-plugins"))
}

// kubeProxyConfig: iptables mode, NodePorts only on the bridge's address, conntrack settings
// left as they are.
func kubeProxyConfig(l layout) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %q
hostnameOverride: %s
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
mode: iptables
clusterCIDR: %s
nodePortAddresses: ["%s/32"]
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, l.path("pki/kube-proxy.conf"), l.NodeName, l.proxyHealthPort, l.metricsP, l.PodCIDR, l.nodeIP)
}

// corefile: CoreDNS answers for cluster.local on the bridge's address, where the kube-dns
// Service sends pods' queries. Other names are refused: nothing here reaches outside.
func corefile(l layout) string {
	return fmt.Sprintf(`.:53 {
    bind %s
    errors
    health 127.0.0.1:%d
    ready 127.0.0.1:%d
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s plinth
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    loadbalance
}
`, l.nodeIP, l.dnsHealthPort, l.dnsReadyPort, l.path("pki/coredns.conf"))
}

// components lists the programs in start order, each with its readiness check.
func components(l layout, pki *kube.PKI) []component {
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(l.etcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(l.etcdPeerPort)
	etcd, _ := kube.Etcd() // preflight made sure there is one
	insecure := func(port int, host string) func(context.Context) error {
		return kube.HTTPProbe(fmt.Sprintf("https://%s/healthz", net.JoinHostPort(host, strconv.Itoa(port))), "", nil, "ok")
	}
	return []component{
		{
			name: "etcd", path: etcd,
			args: []string{"--name=plinth", "--data-dir=" + l.path("etcd"),
				"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
				"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
				"--initial-cluster=plinth=" + peerURL, "--listen-metrics-urls=",
			},
			ready: kube.HTTPProbe(etcdURL+"/health", "", nil, `"health":"true"`),
		},
		{
			name: "kube-apiserver", path: l.binary("kube-apiserver"),
			args: []string{
				"--etcd-servers=" + etcdURL,
				"--bind-address=" + l.nodeIP, "--advertise-address=" + l.nodeIP,
				"--secure-port=" + strconv.Itoa(l.apiPort),
				"--tls-cert-file=" + pki.CertFile, "--tls-private-key-file=" + pki.KeyFile,
				"--client-ca-file=" + pki.CAFile, "--token-auth-file=" + pki.TokenFile,
				"--kubelet-client-certificate=" + pki.KubeletClientCert,
				"--kubelet-client-key=" + pki.KubeletClientKey,
				"--kubelet-preferred-address-types=InternalIP",
				"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
				"--service-account-issuer=" + serviceIssuer,
				"--service-account-key-file=" + pki.SAPubFile,
				"--service-account-signing-key-file=" + pki.SAKeyFile,
				"--service-cluster-ip-range=" + l.ServiceCIDR,
				"--allow-privileged=true",
				"--cert-dir=" + l.path("pki/apiserver-generated"),
			},
			ready: kube.HTTPProbe(l.apiURL()+"/readyz", pki.Tokens[adminUser], pki.CertPool, "ok"),
		},
		{
			name: "kube-controller-manager", path: l.binary("kube-controller-manager"),
			args: []string{
				"--kubeconfig=" + l.path("pki/controller-manager.conf"),
				"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(l.kcmPort),
				"--cert-dir=" + l.path("pki/controller-manager-generated"),
				"--leader-elect=false",
				"--use-service-account-credentials=true",
				"--service-account-private-key-file=" + pki.SAKeyFile,
				"--root-ca-file=" + pki.CAFile,
				"--cluster-signing-cert-file=" + pki.CAFile,
				"--cluster-signing-key-file=" + pki.CAKeyFile,
			},
			ready: insecure(l.kcmPort, "127.0.0.1"),
		},
		{
			name: "kube-scheduler", path: l.binary("kube-scheduler"),
			args: []string{
				"--kubeconfig=" + l.path("pki/scheduler.conf"),
				"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(l.schedPort),
				"--cert-dir=" + l.path("pki/scheduler-generated"),
				"--leader-elect=false",
			},
			ready: insecure(l.schedPort, "127.0.0.1"),
		},
		{
			name: "coredns", path: filepath.Join(l.BinDir, "coredns"),
			args:  []string{"-conf", l.path("Corefile")},
			ready: kube.HTTPProbe(fmt.Sprintf("http://127.0.0.1:%d/ready", l.dnsReadyPort), "", nil, ""),
		},
		{
			name: "containerd", path: "containerd",
			args:  []string{"--config=" + l.path("containerd/config.toml")},
			ready: func(ctx context.Context) error { return ctr(ctx, l, "version") },
		},
		kubeletComponent(l),
		{
			name: "kube-proxy", path: l.binary("kube-proxy"),
			args:  []string{"--config=" + l.path("kube-proxy.yaml")},
			ready: kube.HTTPProbe(fmt.Sprintf("http://127.0.0.1:%d/healthz", l.proxyHealthPort), "", nil, ""),
		},
	}
}

// ctr runs Debian's containerd client against the cluster's containerd, in the namespace
// the kubelet's pods live in.
func ctr(ctx context.Context, l layout, args ...string) error {
	out, err := exec.CommandContext(ctx, "ctr", append([]string{"--address", l.path(containerdSock), "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// kubeletComponent is the kubelet, as Up starts it and RestartKubelet starts it again.
func kubeletComponent(l layout) component {
	return component{
		name: "kubelet", path: l.binary("kubelet"),
		args: []string{
			"--config=" + l.path("kubelet/config.yaml"),
			"--kubeconfig=" + l.path("pki/kubelet.conf"),
			"--root-dir=" + l.path("kubelet"),
			"--cert-dir=" + l.path("kubelet/pki"),
			"--hostname-override=" + l.NodeName,
			"--node-ip=" + l.nodeIP,
		},
		ready: kube.HTTPProbe(fmt.Sprintf("http://127.0.0.1:%d/healthz", l.kubeletHealthPort), "", nil, "ok"),
	}
}
