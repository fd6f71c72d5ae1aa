package vagrant

import (
	"encoding/json"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider"
)

func TestParseAddress(t *testing.T) {
	out := "2: eth0    inet 127.0.0.9/8 scope host lo\n3: eth0    inet 10.213.0.5/24 brd 10.213.0.255 scope global eth0\\       valid_lft forever\n"
	if a, err := parseAddress(out); err != nil || a != "10.213.0.5" {
		t.Fatalf("%q %v", a, err)
	}
	for _, bad := range []string{"", "inet", "inet 300.1.1.1/24", "inet fd00::1/64", "inet 0.0.0.0/0"} {
		if a, err := parseAddress(bad); err == nil {
			t.Errorf("%q → %q", bad, a)
		}
	}
}

// FuzzParseAddress: machine output is untrusted; whatever it is, the answer is an IPv4
// address or an error.
func FuzzParseAddress(f *testing.F) {
	f.Add("3: eth0    inet 10.213.0.5/24 brd 10.213.0.255 scope global eth0\\       valid_lft forever preferred_lft forever")
	f.Add("inet 127.0.0.1/8\ninet 192.168.1.2/16")
	f.Add("inet\ninet inet 1.2.3.4/33")
	f.Fuzz(func(t *testing.T, out string) {
		a, err := parseAddress(out)
		if err != nil {
			return
		}
		if ip, perr := netip.ParseAddr(a); perr != nil || !ip.Is4() || ip.IsLoopback() {
			t.Fatalf("accepted %q", a)
		}
	})
}

// FuzzDecodeMembers: etcd's member list, read from a machine's etcd.
func FuzzDecodeMembers(f *testing.F) {
	f.Add([]byte(`{"header":{"cluster_id":"1","member_id":"2","raft_term":"3"},"members":[{"ID":"2","name":"c-control-plane-1",
		"peerURLs":["https://10.213.0.2:2380"],"clientURLs":["https://10.213.0.2:2379"]},{"ID":"5","peerURLs":["https://10.213.0.3:2380"]}]}`))
	f.Add([]byte(`{"members":null}`))
	f.Add([]byte(`{"members":[{"peerURLs":["http://x"]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ms, err := decodeMembers(body)
		if err != nil {
			return
		}
		if len(ms) > maxMembers {
			t.Fatalf("%d members", len(ms))
		}
		for _, m := range ms {
			for _, u := range m.PeerURLs {
				if !strings.HasPrefix(u, "https://") || len(u) > 256 {
					t.Fatalf("accepted peer URL %q", u)
				}
			}
		}
	})
}

func TestScriptVariablesAreQuoted(t *testing.T) {
	script := withVars(`printf '%s|%s' "$A" "$B"`, [][2]string{{"A", "it's $HOME"}, {"B", "`id`; rm -rf /"}})
	out, err := exec.Command("/bin/sh", "-c", script).Output()
	if err != nil || string(out) != "it's $HOME|`id`; rm -rf /" {
		t.Fatalf("%q %v", out, err)
	}
}

func TestNodeObjectIsMarkedSimulated(t *testing.T) {
	keys, err := pki.New("c")
	if err != nil {
		t.Fatal(err)
	}
	m := provider.Machine{Cluster: "c", Name: "c-control-plane-1", Role: cluster.RoleControlPlane}
	b := provider.Bootstrap{Version: "v1.32.13", PKI: keys, Labels: map[string]string{"team": "a"},
		Taints: []string{"node-role.kubernetes.io/control-plane=:NoSchedule"}}
	data, err := nodeObject(m, b)
	if err != nil {
		t.Fatal(err)
	}
	var n struct {
		Metadata struct {
			Labels, Annotations map[string]string
		}
		Spec struct {
			Taints []map[string]string
		}
		Status struct {
			NodeInfo map[string]string
		}
	}
	if err := json.Unmarshal(data, &n); err != nil {
		t.Fatal(err)
	}
	if n.Metadata.Labels[simulatedLabel] != "true" || n.Metadata.Labels["type"] != "kwok" || n.Metadata.Labels["team"] != "a" ||
		n.Metadata.Annotations[kwokAnnotation] != kwokValue || len(n.Spec.Taints) != 2 || n.Status.NodeInfo["kubeletVersion"] != "v1.32.13" {
		t.Fatalf("node %s", data)
	}
	names := func(m provider.Machine, b provider.Bootstrap) string {
		files, err := bootstrapFiles(m, b, "10.213.0.2", "/var/lib/plinth-kaas/c/"+m.Name)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range files {
			out = append(out, f[:strings.Index(f, "=")])
		}
		return strings.Join(out, " ")
	}
	cp := "apiserver.crt apiserver.key ca.crt ca.key etcd-ca.crt etcd.crt etcd.key kcm.conf kcm.crt kcm.key " +
		"kwok.yaml node-status.json node.conf node.crt node.json node.key sa.key sa.pub"
	if got := names(m, b); got != cp {
		t.Fatalf("joining control-plane machine: %s", got)
	}
	b.Init = true
	if got := names(m, b); got != "admin.crt admin.key "+strings.Replace(cp, "node.key", "node.key rbac-binding.json rbac-role.json", 1) {
		t.Fatalf("first control-plane machine: %s", got)
	}
	// A worker gets its own node credentials and the CA certificate, no key of the cluster's.
	w := provider.Machine{Cluster: "c", Name: "c-w-1", Role: cluster.RoleWorker}
	if got := names(w, provider.Bootstrap{Version: "v1.32.13", PKI: keys, Endpoint: "10.213.0.2:6443"}); got != "ca.crt kwok.yaml node-status.json node.conf node.crt node.json node.key" {
		t.Fatalf("worker: %s", got)
	}
}
