package vagrant

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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

// bootstrapHost is a machine for the bootstrap script: a directory with stand-ins for the
// binaries it starts. A stand-in records that it was started (<binary>.started) and runs
// its body.
type bootstrapHost struct {
	t                 *testing.T
	dir, bin, machine string
}

func newBootstrapHost(t *testing.T) *bootstrapHost {
	dir := t.TempDir()
	h := &bootstrapHost{t: t, dir: dir, bin: filepath.Join(dir, "bin"), machine: filepath.Join(dir, "machine")}
	if err := os.MkdirAll(h.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"etcd", "kube-apiserver-v1.33.13", "kube-controller-manager-v1.33.13", "kwok"} {
		h.binary(n, "exec sleep 60")
	}
	t.Cleanup(h.stopAll)
	return h
}

// binary writes stand-in name with body.
func (h *bootstrapHost) binary(name, body string) {
	h.t.Helper()
	script := "#!/bin/sh\necho started >\"$0.started\"\n" + body + "\n"
	if err := os.WriteFile(filepath.Join(h.bin, name), []byte(script), 0o755); err != nil {
		h.t.Fatal(err)
	}
}

// started lists the stand-ins that ran.
func (h *bootstrapHost) started() []string {
	ms, _ := filepath.Glob(filepath.Join(h.bin, "*.started"))
	var out []string
	for _, m := range ms {
		out = append(out, strings.TrimSuffix(filepath.Base(m), ".started"))
	}
	return out
}

// stopAll kills what the script started (its pid files).
func (h *bootstrapHost) stopAll() {
	pids, _ := filepath.Glob(filepath.Join(h.machine, "*.pid"))
	for _, f := range pids {
		b, _ := os.ReadFile(f)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// run runs the bootstrap of a machine in role with path as PATH, bounded by a minute (the
// script must end long before: it fails at once). The API address refuses connections.
func (h *bootstrapHost) run(role, path string) (stderr string, err error) {
	h.t.Helper()
	script := withVars(bootstrapScript, [][2]string{
		{"D", h.machine}, {"BIN", h.bin}, {"ETCD", filepath.Join(h.bin, "etcd")}, {"V", "v1.33.13"}, {"N", "c-1"},
		{"A", "127.0.0.1"}, {"API", "127.0.0.1:1"}, {"ROLE", role}, {"INIT", "1"}, {"ETCD_CLUSTER", "c-1=https://127.0.0.1:2380"},
		{"ETCD_STATE", "new"}, {"LEADER_ELECT", "false"}, {"POD_CIDR", "10.244.0.0/24"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"-c", script, "kaas-bootstrap"}, h.sealed(map[string]string{"ca.crt": "a CA", "etcd.key": "a key"})...)
	cmd := exec.CommandContext(ctx, "/bin/sh", args...)
	cmd.Env = []string{"PATH=" + path}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ctx.Err() != nil {
		h.t.Fatalf("the bootstrap did not fail at once: %s", out.String())
	}
	return out.String(), err
}

// sealed makes the machine's key (keyScript, once) and seals files to it, as the bootstrap's
// arguments.
func (h *bootstrapHost) sealed(files map[string]string) []string {
	h.t.Helper()
	pub := machineKey(h.t, h.machine)
	var lines []byte
	for n, c := range files {
		lines = append(lines, n+"="+base64.StdEncoding.EncodeToString([]byte(c))+"\n"...)
	}
	args, err := sealedArgs(pub, lines)
	if err != nil {
		h.t.Fatal(err)
	}
	return args
}

// lastLine is the line kaas's status shows of a failed bootstrap.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// TestBootstrapFailsAtOnceOnAMissingBinary: the bootstrap checks every binary it is about to
// start before it starts any, and names the missing one in its last line.
func TestBootstrapFailsAtOnceOnAMissingBinary(t *testing.T) {
	cases := []struct {
		role, missing, says string
	}{
		{"control-plane", "etcd", "etcd is missing or not executable: install Debian's etcd-server (apt-get install etcd-server)"},
		{"control-plane", "kube-apiserver-v1.33.13", "kube-apiserver-v1.33.13 is missing or not executable: run make tools-k8s"},
		{"control-plane", "kube-controller-manager-v1.33.13", "kube-controller-manager-v1.33.13 is missing or not executable: run make tools-k8s"},
		{"control-plane", "kwok", "kwok is missing or not executable: run make tools-k8s"},
		{"worker", "kwok", "kwok is missing or not executable: run make tools-k8s"},
	}
	for _, tc := range cases {
		t.Run(tc.role+" without "+tc.missing, func(t *testing.T) {
			h := newBootstrapHost(t)
			if err := os.Remove(filepath.Join(h.bin, tc.missing)); err != nil {
				t.Fatal(err)
			}
			out, err := h.run(tc.role, os.Getenv("PATH"))
			if err == nil {
				t.Fatalf("the bootstrap succeeded without %s: %s", tc.missing, out)
			}
			if want := "kaas: " + filepath.Join(h.bin, tc.says); lastLine(out) != want {
				t.Fatalf("last line %q, want %q", lastLine(out), want)
			}
			if s := h.started(); len(s) > 0 {
				t.Fatalf("started %v before finding %s missing", s, tc.missing)
			}
		})
	}
	t.Run("without curl", func(t *testing.T) {
		h := newBootstrapHost(t)
		path := filepath.Join(h.dir, "path") // the tools the script uses, but curl
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, tool := range []string{"cat", "base64", "mkdir", "kill", "sleep", "setsid", "tail", "cut", "rm"} {
			p, err := exec.LookPath(tool)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(p, filepath.Join(path, tool)); err != nil {
				t.Fatal(err)
			}
		}
		out, err := h.run("control-plane", path)
		if err == nil || lastLine(out) != "kaas: curl is missing: install Debian's curl (apt-get install curl)" || len(h.started()) > 0 {
			t.Fatalf("%v: %s (started %v)", err, out, h.started())
		}
	})
}

// TestBootstrapReportsAProcessThatExits: etcd that exits at once, and an API server that
// exits while the script waits for it, end the bootstrap at once with the last line of
// their logs — not with the API server's timeout 180 s later.
func TestBootstrapReportsAProcessThatExits(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("the bootstrap needs curl")
	}
	t.Run("etcd", func(t *testing.T) {
		h := newBootstrapHost(t)
		h.binary("etcd", `echo '{"level":"fatal","msg":"listener failed","error":"listen tcp 127.0.0.1:2380: bind: address already in use"}'; exit 1`)
		out, err := h.run("control-plane", os.Getenv("PATH"))
		want := `kaas: etcd exited: {"level":"fatal","msg":"listener failed","error":"listen tcp 127.0.0.1:2380: bind: address already in use"} (log: ` +
			filepath.Join(h.machine, "etcd.log") + ")"
		if err == nil || lastLine(out) != want {
			t.Fatalf("%v: last line %q, want %q", err, lastLine(out), want)
		}
		if s := strings.Join(h.started(), " "); s != "etcd" {
			t.Fatalf("started %s after etcd exited", s)
		}
	})
	t.Run("kube-apiserver", func(t *testing.T) {
		h := newBootstrapHost(t)
		h.binary("kube-apiserver-v1.33.13", `sleep 0.5; echo 'E1127 run.go:72] "command failed" err="Error creating leases: error creating storage factory: context deadline exceeded"'; exit 1`)
		out, err := h.run("control-plane", os.Getenv("PATH"))
		if err == nil || !strings.HasPrefix(lastLine(out), `kaas: kube-apiserver exited: E1127 run.go:72] "command failed" err="Error creating leases`) {
			t.Fatalf("%v: last line %q", err, lastLine(out))
		}
	})
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
		for _, f := range strings.Split(strings.TrimSuffix(string(files), "\n"), "\n") {
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
	if got := names(m, b); got != strings.Replace(strings.Replace(cp, "kcm.conf", "kaas.crt kaas.key kcm.conf", 1), "node.key", "node.key rbac-binding.json rbac-role.json", 1) {
		t.Fatalf("first control-plane machine: %s", got)
	}
	// A worker gets its own node credentials and the CA certificate, no key of the cluster's.
	w := provider.Machine{Cluster: "c", Name: "c-w-1", Role: cluster.RoleWorker}
	if got := names(w, provider.Bootstrap{Version: "v1.32.13", PKI: keys, Endpoint: "10.213.0.2:6443"}); got != "ca.crt kwok.yaml node-status.json node.conf node.crt node.json node.key" {
		t.Fatalf("worker: %s", got)
	}
}
