package kubelocal

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/plinth-dev/plinth/libs/kubetest"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
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

// A program goes to /usr/local/bin unless ProgramPath names its place in the image, whose
// parent directories the layer then holds too; the first program is the entrypoint.
func TestProgramPlaces(t *testing.T) {
	// Debian's static busybox, which every stand-in carries (busybox-static).
	self := busyboxPath
	if err := static(self); err != nil {
		testenv.SkipOrFail(t, err.Error()+": install busybox-static")
	}
	s := programStandIn("example/x:1", ProgramPath(self, "/opt/op/manager"), self)
	if want := []string{"/opt/op/manager"}; !slices.Equal(s.entrypoint, want) {
		t.Errorf("entrypoint %v, want %v", s.entrypoint, want)
	}
	layer, err := programLayer(nil, ProgramPath(self, "/opt/op/manager"), self)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	for _, want := range []string{"opt/", "opt/op/", "opt/op/manager", "usr/local/bin/" + filepath.Base(self)} {
		if !slices.Contains(names, want) {
			t.Errorf("layer lacks %s: %v", want, names)
		}
	}
	if hostPath(ProgramPath("/a/b", "/manager")) != "/a/b" || hostPath("/a/b") != "/a/b" {
		t.Error("hostPath does not give back the file on this machine")
	}
}

// Upstream's manifest, changed only where this cluster differs: the provisioner runs the
// stand-in's program, volumes go under the cluster's directory, helper pods use the busybox
// stand-in, and its StorageClass is the default.
func TestLocalPathObjects(t *testing.T) {
	dir, err := kubetest.ModuleDir(LocalPathModule)
	if err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "deploy", "local-path-storage.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := localPathObjects(manifest, "/scratch/volumes", "/usr/local/bin/local-path-provisioner")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[fmt.Sprintf("%T", o)] = true
		switch o := o.(type) {
		case *appsv1.Deployment:
			c := o.Spec.Template.Spec.Containers[0]
			if c.Image != LocalPathImage || c.ImagePullPolicy != corev1.PullNever || c.Command[0] != "/usr/local/bin/local-path-provisioner" {
				t.Errorf("provisioner container: image %s (%s), command %v", c.Image, c.ImagePullPolicy, c.Command)
			}
		case *corev1.ConfigMap:
			if !strings.Contains(o.Data["config.json"], `"paths":["/scratch/volumes"]`) {
				t.Errorf("config.json: %s", o.Data["config.json"])
			}
			if !strings.Contains(o.Data["helperPod.yaml"], "image: "+BusyboxImage) {
				t.Errorf("helperPod.yaml: %s", o.Data["helperPod.yaml"])
			}
		case *storagev1.StorageClass:
			if o.Name != StorageClass || o.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" {
				t.Errorf("StorageClass %s, annotations %v", o.Name, o.Annotations)
			}
		}
	}
	for _, k := range []string{"*v1.Namespace", "*v1.ServiceAccount", "*v1.ClusterRole", "*v1.ClusterRoleBinding", "*v1.Deployment", "*v1.StorageClass", "*v1.ConfigMap"} {
		if !kinds[k] {
			t.Errorf("no %s in %v", k, kinds)
		}
	}
	if _, err := localPathObjects([]byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n"), "/v", "/p"); err == nil {
		t.Error("a manifest without the provisioner was taken")
	}
}
