package k8scheck

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	cnpgiplugin "github.com/plinth-dev/plinth/services/cnpgi-plugin/plugin"
)

// Every kustomization builds, and every check passes on what it builds.
func TestKustomizationsPassEveryCheck(t *testing.T) {
	doc := documented(t)
	for _, dir := range kustomizations {
		t.Run(dir, func(t *testing.T) {
			objs := build(t, dir)
			s := decode(t, objs)
			runChecks(t, s, doc, true)
			if len(s.Workloads) != 8 {
				t.Errorf("%d workloads, want 8 (auth, stats, kaas, vagrant-server, vagrant-runner, lvmd-agent, cnpgi-plugin, gateway)", len(s.Workloads))
			}
			for _, o := range objs {
				switch o.GetKind() {
				case "Namespace", "ClusterRole":
				case "ClusterRoleBinding":
					// Cluster-scoped: its subjects must be plinth's own service accounts.
					subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
					for _, sub := range subjects {
						if m, _ := sub.(map[string]any); m["namespace"] != "plinth" {
							t.Errorf("%s binds %v, outside namespace plinth", o, sub)
						}
					}
				default:
					if o.GetNamespace() != "plinth" {
						t.Errorf("%s is not in namespace plinth", o)
					}
				}
			}
		})
	}
}

// runChecks runs every check on s; envoy includes the Envoy gateway's contract.
func runChecks(t *testing.T, s *Set, doc Documented, envoy bool) {
	t.Helper()
	checks := map[string][]error{
		"services":   CheckServices(s),
		"budgets":    CheckBudgets(s),
		"containers": CheckContainers(s),
		"references": CheckReferences(s, doc),
		"postgres":   CheckPostgresTrustsNoOne(s),
		"runners":    CheckRunnerSandbox(s),
		"auth":       CheckAuthGateway(s),
	}
	if envoy {
		checks["gateway"] = CheckGateway(s)
	}
	for name, errs := range checks {
		if err := errors.Join(errs...); err != nil {
			t.Errorf("%s:\n%v", name, err)
		}
	}
}

// The Services and ports the gateway's Envoy configuration is generated against.
func TestServicePorts(t *testing.T) {
	s := decode(t, build(t, kustomizations[0]))
	for _, be := range append(slices.Clone(Contract), Backend{Service: "gateway", Port: GatewayPort}) {
		svc, err := s.Service(be.Service)
		if err != nil {
			t.Error(err)
			continue
		}
		if !servesPort(svc, be.Port) {
			t.Errorf("%s: ports %v, want %d among them", svc, svc.Spec.Spec.Ports, be.Port)
		}
	}
	// Each service's probes ask its own admin port, 71xx for gRPC port 70xx.
	for _, name := range []string{"auth", "stats", "kaas", "vagrant-server", "cnpgi-plugin"} {
		w, err := s.Workload("Deployment", name)
		if err != nil {
			t.Fatal(err)
		}
		c := w.Template.Spec.Containers[0]
		grpc := c.Ports[0].ContainerPort
		admin := int32(0)
		for _, p := range c.Ports {
			if p.Name == "admin" {
				admin = p.ContainerPort
			}
		}
		if admin != grpc+100 {
			t.Errorf("%s: admin port %d, want %d", w, admin, grpc+100)
		}
		if got := c.ReadinessProbe.HTTPGet; got == nil || got.Path != "/readyz" || got.Port.StrVal != "admin" {
			t.Errorf("%s: readinessProbe %+v, want GET /readyz on admin", w, c.ReadinessProbe)
		}
		if got := c.LivenessProbe.HTTPGet; got == nil || got.Path != "/healthz" || got.Port.StrVal != "admin" {
			t.Errorf("%s: livenessProbe %+v, want GET /healthz on admin", w, c.LivenessProbe)
		}
		env := envOf(c)
		if addr := env["PLINTH_ADMIN_ADDR"]; addr != "0.0.0.0:"+strconv.Itoa(int(admin)) {
			t.Errorf("%s: PLINTH_ADMIN_ADDR %q: the kubelet could not reach the probes", w, addr)
		}
	}
}

// cnpgi-plugin's Service is what CloudNativePG's plugin reconciler looks for (label and
// annotation names as in cloudnative-pg's pkg/utils/labels_annotations.go), with Secrets
// cert-manager writes, a port the Service serves, and a server certificate for the name the
// operator verifies: the Service's own.
func TestCNPGPluginService(t *testing.T) {
	objs := build(t, kustomizations[0])
	s := decode(t, objs)
	svc, err := s.Service("cnpgi-plugin")
	if err != nil {
		t.Fatal(err)
	}
	if got := svc.GetLabels()["cnpg.io/pluginName"]; got != cnpgiplugin.DefaultName {
		t.Errorf("label cnpg.io/pluginName = %q, want the plugin's name %s", got, cnpgiplugin.DefaultName)
	}
	a := svc.GetAnnotations()
	port, err := strconv.Atoi(a["cnpg.io/pluginPort"])
	if err != nil || !servesPort(svc, uint32(port)) {
		t.Errorf("annotation cnpg.io/pluginPort = %q: not a port of the Service (%v)", a["cnpg.io/pluginPort"], err)
	}
	server, ok := certificateFor(s, a["cnpg.io/pluginServerSecret"])
	if !ok {
		t.Fatalf("no Certificate writes the server Secret %q", a["cnpg.io/pluginServerSecret"])
	}
	client, ok := certificateFor(s, a["cnpg.io/pluginClientSecret"])
	if !ok {
		t.Fatalf("no Certificate writes the client Secret %q", a["cnpg.io/pluginClientSecret"])
	}
	if !serverCertificate(s, issuerOf(server), svc.GetName()) {
		t.Errorf("server Certificate %s has no dnsName %q (the operator's TLS server name)", server, svc.GetName())
	}
	if issuerOf(server) != issuerOf(client) {
		t.Errorf("server and client pairs from different issuers (%s, %s): the plugin trusts the server Secret's ca.crt for clients", issuerOf(server), issuerOf(client))
	}
	w, err := s.Workload("Deployment", "cnpgi-plugin")
	if err != nil {
		t.Fatal(err)
	}
	c := w.Template.Spec.Containers[0]
	env := envOf(c)
	mounts := mountSources(w.Template.Spec, c)
	if src := mounts["/etc/plinth/cnpgi-server"]; src.name != a["cnpg.io/pluginServerSecret"] {
		t.Errorf("the plugin mounts %+v at /etc/plinth/cnpgi-server, want the server Secret", src)
	}
	for k, want := range map[string]string{
		"PLINTH_CNPGI_PLUGIN_NAME":   cnpgiplugin.DefaultName,
		"PLINTH_CNPGI_TLS_ADDR":      "0.0.0.0:" + a["cnpg.io/pluginPort"],
		"PLINTH_CNPGI_TLS_CERT":      "/etc/plinth/cnpgi-server/tls.crt",
		"PLINTH_CNPGI_TLS_KEY":       "/etc/plinth/cnpgi-server/tls.key",
		"PLINTH_CNPGI_TLS_CLIENT_CA": "/etc/plinth/cnpgi-server/ca.crt",
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
}

// lvmd-agent serves TopoLVM's node plugin where it dials, /run/topolvm/lvmd.sock on the host,
// with device classes from the ConfigMap, privileged for lvm.
func TestLvmdAgentDaemonSet(t *testing.T) {
	objs := build(t, kustomizations[0])
	s := decode(t, objs)
	w, err := s.Workload("DaemonSet", "lvmd-agent")
	if err != nil {
		t.Fatal(err)
	}
	spec := w.Template.Spec
	c := spec.Containers[0]
	env := envOf(c)
	if env["PLINTH_GRPC_ADDR"] != "unix:///run/topolvm/lvmd.sock" {
		t.Errorf("PLINTH_GRPC_ADDR = %q, want TopoLVM's socket", env["PLINTH_GRPC_ADDR"])
	}
	hostDir := ""
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/run/topolvm" {
			for _, v := range spec.Volumes {
				if v.Name == m.Name && v.HostPath != nil {
					hostDir = v.HostPath.Path
				}
			}
		}
	}
	if hostDir != "/run/topolvm" {
		t.Errorf("/run/topolvm in the pod is host path %q, want /run/topolvm (where TopoLVM's node plugin dials)", hostDir)
	}
	if sc := c.SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged {
		t.Error("lvmd-agent is not privileged: lvm cannot reach the host's devices")
	}
	cm := find(t, objs, "ConfigMap", "lvmd-agent-config")
	raw, _, _ := unstructured.NestedString(cm.Object, "data", "lvmd.yaml")
	var lvmd struct {
		SocketName    string           `json:"socket-name"`
		DeviceClasses []map[string]any `json:"device-classes"`
	}
	if err := yaml.Unmarshal([]byte(raw), &lvmd); err != nil {
		t.Fatal(err)
	}
	if lvmd.SocketName != "/run/topolvm/lvmd.sock" || len(lvmd.DeviceClasses) == 0 {
		t.Errorf("lvmd.yaml: socket-name %q, %d device classes", lvmd.SocketName, len(lvmd.DeviceClasses))
	}
	if env["PLINTH_LVMD_CONFIG"] != "/etc/topolvm/lvmd.yaml" || mountSources(spec, c)["/etc/topolvm"].name != cm.GetName() {
		t.Errorf("PLINTH_LVMD_CONFIG %q is not the mounted ConfigMap %s", env["PLINTH_LVMD_CONFIG"], cm.GetName())
	}
}

func envOf(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}
