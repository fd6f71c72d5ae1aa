package maas

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider"
)

// kubeadmAPI is the kubeadm configuration version every catalog release (1.31+) reads.
const kubeadmAPI = "kubeadm.k8s.io/v1beta4"

// cloudConfig is the part of cloud-init's #cloud-config that kaas writes.
type cloudConfig struct {
	WriteFiles []file     `json:"write_files"`
	RunCmd     [][]string `json:"runcmd"`
}

type file struct {
	Path        string `json:"path"`
	Permissions string `json:"permissions"`
	Encoding    string `json:"encoding,omitempty"`
	Content     string `json:"content"`
}

// Paths on the deployed machine.
const (
	pkiDir        = "/etc/kubernetes/pki"
	kubeadmConfig = "/etc/kubernetes/kaas/kubeadm.yaml"
	bootstrapPath = "/usr/local/sbin/kaas-bootstrap"
)

// UserData is the cloud-init user data that turns a freshly deployed machine into machine m
// of its cluster: the cluster's shared key material (control-plane machines only), a kubeadm
// configuration — InitConfiguration and ClusterConfiguration on the first control-plane
// machine, JoinConfiguration (with controlPlane on the others) elsewhere — and a script that
// installs kubeadm and the kubelet of b.Version from pkgs.k8s.io and runs kubeadm.
// controlPlaneHost is the stable name of the first control-plane machine (its MAAS FQDN).
func UserData(m provider.Machine, b provider.Bootstrap, controlPlaneHost string) ([]byte, error) {
	cfg, err := kubeadmConfigFor(m, b, controlPlaneHost)
	if err != nil {
		return nil, err
	}
	var cc cloudConfig
	if m.Role == cluster.RoleControlPlane {
		p := b.PKI
		for _, f := range []struct {
			name string
			data []byte
			mode string
		}{
			{"ca.crt", p.CA.CertPEM, "0644"}, {"ca.key", p.CA.KeyPEM, "0600"},
			{"sa.key", p.ServiceAccountKey, "0600"},
			{"front-proxy-ca.crt", p.FrontProxyCA.CertPEM, "0644"}, {"front-proxy-ca.key", p.FrontProxyCA.KeyPEM, "0600"},
			{"etcd/ca.crt", p.EtcdCA.CertPEM, "0644"}, {"etcd/ca.key", p.EtcdCA.KeyPEM, "0600"},
		} {
			cc.WriteFiles = append(cc.WriteFiles, b64File(pkiDir+"/"+f.name, f.mode, f.data))
		}
		pub, err := p.ServiceAccountPublicKey()
		if err != nil {
			return nil, err
		}
		cc.WriteFiles = append(cc.WriteFiles, b64File(pkiDir+"/sa.pub", "0644", pub))
	}
	cc.WriteFiles = append(cc.WriteFiles,
		b64File(kubeadmConfig, "0600", cfg),
		b64File(bootstrapPath, "0755", []byte(bootstrapScript(b.Version, m.Role == cluster.RoleControlPlane && b.Init))))
	cc.RunCmd = [][]string{{bootstrapPath}}
	out, err := yaml.Marshal(cc)
	if err != nil {
		return nil, err
	}
	return append([]byte("#cloud-config\n"), out...), nil
}

func b64File(path, mode string, data []byte) file {
	return file{Path: path, Permissions: mode, Encoding: "b64", Content: base64.StdEncoding.EncodeToString(data)}
}

type arg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type nodeRegistration struct {
	Name             string  `json:"name"`
	KubeletExtraArgs []arg   `json:"kubeletExtraArgs,omitempty"`
	Taints           []taint `json:"taints"`
}

type taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

func kubeadmConfigFor(m provider.Machine, b provider.Bootstrap, controlPlaneHost string) ([]byte, error) {
	reg := nodeRegistration{Name: m.Name, Taints: []taint{}}
	if labels := labelArg(b.Labels); labels != "" {
		reg.KubeletExtraArgs = []arg{{Name: "node-labels", Value: labels}}
	}
	for _, t := range b.Taints {
		kv, effect, _ := strings.Cut(t, ":")
		k, v, _ := strings.Cut(kv, "=")
		reg.Taints = append(reg.Taints, taint{Key: k, Value: v, Effect: effect})
	}
	endpoint := b.Endpoint
	if controlPlaneHost != "" {
		endpoint = controlPlaneHost + ":6443"
	}
	if m.Role == cluster.RoleControlPlane && b.Init {
		init := map[string]any{
			"apiVersion": kubeadmAPI, "kind": "InitConfiguration",
			"bootstrapTokens":  []map[string]any{{"token": b.PKI.BootstrapToken, "ttl": "0s", "usages": []string{"signing", "authentication"}, "groups": []string{"system:bootstrappers:kubeadm:default-node-token"}}},
			"nodeRegistration": reg,
		}
		clusterCfg := map[string]any{
			"apiVersion": kubeadmAPI, "kind": "ClusterConfiguration",
			"clusterName": m.Cluster, "kubernetesVersion": b.Version,
			"controlPlaneEndpoint": endpoint,
			"apiServer":            map[string]any{"certSANs": []string{controlPlaneHost}},
		}
		return yamlDocs(init, clusterCfg)
	}
	hash, err := b.PKI.CACertHash()
	if err != nil {
		return nil, err
	}
	join := map[string]any{
		"apiVersion": kubeadmAPI, "kind": "JoinConfiguration",
		"discovery": map[string]any{"bootstrapToken": map[string]any{
			"apiServerEndpoint": endpoint, "token": b.PKI.BootstrapToken, "caCertHashes": []string{hash}}},
		"nodeRegistration": reg,
	}
	if m.Role == cluster.RoleControlPlane {
		// The shared certificates are already in place (write_files), so no certificate key.
		join["controlPlane"] = map[string]any{}
	}
	return yamlDocs(join)
}

func labelArg(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}

func yamlDocs(docs ...any) ([]byte, error) {
	var out []string
	for _, d := range docs {
		b, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		out = append(out, string(b))
	}
	return []byte(strings.Join(out, "---\n")), nil
}

// bootstrapScript installs containerd, kubeadm and the kubelet of version (pkgs.k8s.io
// serves one apt repository per minor release) and runs kubeadm init or join with the
// configuration written beside it.
func bootstrapScript(version string, init bool) string {
	v := strings.TrimPrefix(version, "v")
	minor := version
	if i := strings.LastIndex(version, "."); i > 0 {
		minor = version[:i]
	}
	action := "join"
	if init {
		action = "init"
	}
	return fmt.Sprintf(`#!/bin/sh
# Written by kaas: installs Kubernetes %[1]s and runs kubeadm %[3]s.
set -eu
export DEBIAN_FRONTEND=noninteractive
swapoff -a
modprobe overlay
modprobe br_netfilter
sysctl -w net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
apt-get update
apt-get install -y apt-transport-https ca-certificates curl gpg containerd
mkdir -p /etc/containerd /etc/apt/keyrings
containerd config default | sed 's/SystemdCgroup = false/SystemdCgroup = true/' > /etc/containerd/config.toml
systemctl restart containerd
curl -fsSL https://pkgs.k8s.io/core:/stable:/%[2]s/deb/Release.key | gpg --dearmor --yes -o /etc/apt/keyrings/kubernetes-apt-keyring.gpg
echo 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/%[2]s/deb/ /' > /etc/apt/sources.list.d/kubernetes.list
apt-get update
apt-get install -y --allow-change-held-packages kubelet=%[4]s-* kubeadm=%[4]s-* kubectl=%[4]s-*
apt-mark hold kubelet kubeadm kubectl
kubeadm %[3]s --config %[5]s
`, version, minor, action, v, kubeadmConfig)
}
