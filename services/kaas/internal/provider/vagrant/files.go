package vagrant

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strings"

	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider"
)

// Marks of a Node that kwok, not a kubelet, keeps: kwok's own annotation and label, kaas's
// label, and a taint that keeps workloads that do not expect a simulated node off it.
const (
	kwokAnnotation  = "kwok.x-k8s.io/node"
	kwokValue       = "fake"
	simulatedLabel  = cluster.LabelPrefix + "simulated"
	serviceIP       = "10.96.0.1" // the first address of --service-cluster-ip-range
	simulatedRBAC   = "kaas:simulated-node"
	kwokConfigFile  = "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions: {}\n"
	apiServerIssuer = "kube-apiserver"
)

// bootstrapFiles are the files the bootstrap of machine m (address addr, directory dir)
// needs, as "name=<base64>" lines: what is sealed for the machine (sealedArgs).
func bootstrapFiles(m provider.Machine, b provider.Bootstrap, addr, dir string) ([]byte, error) {
	p := b.PKI
	files := map[string][]byte{"ca.crt": p.CA.CertPEM, "kwok.yaml": []byte(kwokConfigFile)}
	pkiDir := filepath.Join(dir, "pki")
	api := b.Endpoint
	if m.Role == cluster.RoleControlPlane {
		api = net.JoinHostPort(addr, "6443")
	}
	node, err := p.Issue(pki.CertSpec{CommonName: "system:node:" + m.Name, Orgs: []string{"system:nodes"}, Client: true})
	if err != nil {
		return nil, err
	}
	files["node.crt"], files["node.key"] = node.CertPEM, node.KeyPEM
	if files["node.conf"], err = kubeconfigWithFiles(pkiDir, "node", m.Cluster, api); err != nil {
		return nil, err
	}
	if files["node.json"], err = nodeObject(m, b); err != nil {
		return nil, err
	}
	if files["node-status.json"], err = json.Marshal(map[string]any{"status": map[string]any{"nodeInfo": map[string]any{"kubeletVersion": b.Version}}}); err != nil {
		return nil, err
	}
	if m.Role == cluster.RoleControlPlane {
		if err := controlPlaneFiles(files, m, b, addr, pkiDir); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []byte
	for _, n := range names {
		out = append(append(append(out, n+"="...), base64.StdEncoding.EncodeToString(files[n])...), '\n')
	}
	return out, nil
}

// sealedArgs are the bootstrap's positional arguments: files sealed for the machine's key
// (PEM), as the script's unseal takes them. Only ciphertext reaches the job's arguments, so
// vagrant-server's job rows and streams, and whoever reads them, hold no private key.
func sealedArgs(machineKey string, files []byte) ([]string, error) {
	pub, err := pki.ParseMachineKey(machineKey)
	if err != nil {
		return nil, err
	}
	s, err := pki.SealFor(pub, files)
	if err != nil {
		return nil, err
	}
	return []string{base64.StdEncoding.EncodeToString(s.Wrapped), base64.StdEncoding.EncodeToString(s.Ciphertext), s.MAC}, nil
}

func controlPlaneFiles(files map[string][]byte, m provider.Machine, b provider.Bootstrap, addr, pkiDir string) error {
	p := b.PKI
	ip := net.ParseIP(addr)
	serving, err := p.Issue(pki.CertSpec{CommonName: apiServerIssuer, Server: true,
		IPs:      []net.IP{ip, net.ParseIP(serviceIP)},
		DNSNames: []string{m.Name, "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}})
	if err != nil {
		return err
	}
	etcd, err := p.IssueEtcd(pki.CertSpec{CommonName: m.Name, Server: true, Client: true,
		IPs: []net.IP{ip, net.IPv4(127, 0, 0, 1)}, DNSNames: []string{m.Name, "localhost"}})
	if err != nil {
		return err
	}
	kcm, err := p.Issue(pki.CertSpec{CommonName: "system:kube-controller-manager", Client: true})
	if err != nil {
		return err
	}
	saPub, err := p.ServiceAccountPublicKey()
	if err != nil {
		return err
	}
	files["apiserver.crt"], files["apiserver.key"] = serving.CertPEM, serving.KeyPEM
	files["etcd.crt"], files["etcd.key"], files["etcd-ca.crt"] = etcd.CertPEM, etcd.KeyPEM, p.EtcdCA.CertPEM
	files["kcm.crt"], files["kcm.key"] = kcm.CertPEM, kcm.KeyPEM
	files["ca.key"] = p.CA.KeyPEM // the controller manager signs approved CSRs with it, as on kubeadm's control planes
	files["sa.key"], files["sa.pub"] = p.ServiceAccountKey, saPub
	if files["kcm.conf"], err = kubeconfigWithFiles(pkiDir, "kcm", m.Cluster, net.JoinHostPort(addr, "6443")); err != nil {
		return err
	}
	if b.Init {
		// kaas's own identity for an hour, to create the simulated nodes' RBAC; the script
		// deletes it once done.
		self, err := p.Self()
		if err != nil {
			return err
		}
		files["kaas.crt"], files["kaas.key"] = self.CertPEM, self.KeyPEM
		files["rbac-role.json"], files["rbac-binding.json"] = rbacObjects()
	}
	return nil
}

// kubeconfigWithFiles is a kubeconfig for user (its <user>.crt and <user>.key beside ca.crt
// in pkiDir) of cluster at api.
func kubeconfigWithFiles(pkiDir, user, cluster, api string) ([]byte, error) {
	type named struct {
		Name    string         `json:"name"`
		Cluster map[string]any `json:"cluster,omitempty"`
		User    map[string]any `json:"user,omitempty"`
		Context map[string]any `json:"context,omitempty"`
	}
	cfg := map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": user,
		"clusters": []named{{Name: cluster, Cluster: map[string]any{"server": "https://" + api, "certificate-authority": filepath.Join(pkiDir, "ca.crt")}}},
		"users": []named{{Name: user, User: map[string]any{"client-certificate": filepath.Join(pkiDir, user+".crt"),
			"client-key": filepath.Join(pkiDir, user+".key")}}},
		"contexts": []named{{Name: user, Context: map[string]any{"cluster": cluster, "user": user}}},
	}
	return json.Marshal(cfg) // JSON is YAML: every client reads it
}

// nodeObject is the Node machine m registers, marked as simulated by kwok.
func nodeObject(m provider.Machine, b provider.Bootstrap) ([]byte, error) {
	labels := map[string]string{}
	for k, v := range b.Labels {
		labels[k] = v
	}
	labels[simulatedLabel] = "true"
	labels["type"] = "kwok" // what kwok's own tooling marks its nodes with
	labels["kubernetes.io/hostname"] = m.Name
	labels["kubernetes.io/os"] = "linux"
	labels["kubernetes.io/arch"] = "amd64"
	taints := []map[string]string{{"key": kwokAnnotation, "value": kwokValue, "effect": "NoSchedule"}}
	for _, t := range b.Taints {
		kv, effect, _ := strings.Cut(t, ":")
		k, v, _ := strings.Cut(kv, "=")
		taints = append(taints, map[string]string{"key": k, "value": v, "effect": effect})
	}
	return json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": m.Name, "labels": labels,
			"annotations": map[string]string{kwokAnnotation: kwokValue, cluster.LabelPrefix + "provider": Name}},
		"spec":   map[string]any{"taints": taints},
		"status": map[string]any{"nodeInfo": map[string]any{"kubeletVersion": b.Version}},
	})
}

// rbacObjects let simulated nodes' kwok list what it watches: since Kubernetes 1.32 the Node
// authorizer confines a node to its own objects, and kwok lists nodes, pods and leases.
func rbacObjects() ([]byte, []byte) {
	role, _ := json.Marshal(map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": simulatedRBAC},
		"rules": []map[string]any{
			{"apiGroups": []string{""}, "resources": []string{"nodes", "pods"}, "verbs": []string{"get", "list", "watch"}},
			{"apiGroups": []string{"coordination.k8s.io"}, "resources": []string{"leases"}, "verbs": []string{"get", "list", "watch"}},
		}})
	binding, _ := json.Marshal(map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": simulatedRBAC},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": simulatedRBAC},
		"subjects": []map[string]any{{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}},
	})
	return role, binding
}

// podCIDR gives each machine's kwok its own pod addresses, from its address's last octet.
func podCIDR(addr string) string {
	ip := net.ParseIP(addr).To4()
	if ip == nil {
		return "10.244.0.0/24"
	}
	return fmt.Sprintf("10.244.%d.0/24", ip[3])
}
