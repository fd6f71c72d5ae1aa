package kubelocal

import (
	"slices"
	"testing"
)

// iptables-save quotes comments; deleting the rule needs them as one argument each.
func TestSplitRule(t *testing.T) {
	got := splitRule(`INPUT -m comment --comment "kubernetes service portals \"x\"" -j KUBE-SERVICES`)
	want := []string{"INPUT", "-m", "comment", "--comment", `kubernetes service portals "x"`, "-j", "KUBE-SERVICES"}
	if !slices.Equal(got, want) {
		t.Errorf("splitRule = %q, want %q", got, want)
	}
}

// mountinfo escapes spaces and other bytes in mount points as octal.
func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/var/lib/plinth-kube/a\040b`: "/var/lib/plinth-kube/a b",
		`/run/netns/cni-1`:            "/run/netns/cni-1",
		`/x\011y\134z`:                "/x\ty\\z",
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// The layout puts every listener on its own port from PortBase and the apiserver and kubelet
// on the bridge's address.
func TestLayout(t *testing.T) {
	o := Options{BinDir: "/bin", PodCIDR: "10.245.0.0/24", ServiceCIDR: "10.97.0.0/24", PortBase: 30000}
	if err := o.defaults(); err != nil {
		t.Fatal(err)
	}
	l := newLayout(o)
	if l.nodeIP != "10.245.0.1" || l.kubeSvcIP != "10.97.0.1" || l.dnsIP != "10.97.0.10" || l.apiURL() != "https://10.245.0.1:30002" {
		t.Errorf("layout: node %s, kubernetes %s, dns %s, api %s", l.nodeIP, l.kubeSvcIP, l.dnsIP, l.apiURL())
	}
	ports := []int{l.etcdPort, l.etcdPeerPort, l.apiPort, l.kcmPort, l.schedPort, l.kubeletPort, l.kubeletHealthPort, l.proxyHealthPort, l.metricsP, l.dnsHealthPort, l.dnsReadyPort}
	slices.Sort(ports)
	if len(slices.Compact(ports)) != 11 {
		t.Errorf("ports overlap: %v", ports)
	}
	for _, bad := range []Options{
		{BinDir: "/bin", PodCIDR: "10.245.0.0/30"},
		{BinDir: "/bin", ServiceCIDR: "10.97.0.1/24"},
		{BinDir: "/bin", Bridge: "a-bridge-name-too-long"},
		{},
	} {
		if err := bad.defaults(); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
}
