package k8scheck

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Each check fails on the mistake it exists for: the base with one thing broken.
func TestChecksCatchMistakes(t *testing.T) {
	base := build(t, kustomizations[0])
	doc := documented(t)
	set := func(t *testing.T, o Object, value any, fields ...string) {
		t.Helper()
		if err := unstructured.SetNestedField(o.Object, value, fields...); err != nil {
			t.Fatal(err)
		}
	}
	// container edits the first container of a workload (unstructured's Nested* getters copy).
	container := func(t *testing.T, objs []Object, kind, name string, edit func(c map[string]any)) {
		t.Helper()
		o := find(t, objs, kind, name)
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		edit(cs[0].(map[string]any))
		set(t, o, cs, "spec", "template", "spec", "containers")
	}
	addEnv := func(c map[string]any, e map[string]any) {
		c["env"] = append(c["env"].([]any), e)
	}
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, objs []Object)
		check  func(s *Set) []error
		want   []string
	}{
		{"unknown field in a Deployment", func(t *testing.T, objs []Object) {
			set(t, find(t, objs, "Deployment", "auth"), int64(1), "spec", "replica")
		}, nil, []string{"Deployment/plinth/auth", `unknown field "spec.replica"`}},
		{"misplaced field in a container", func(t *testing.T, objs []Object) {
			container(t, objs, "Deployment", "stats", func(c map[string]any) { c["readinessprobe"] = map[string]any{} })
		}, nil, []string{"Deployment/plinth/stats", "readinessprobe"}},
		{"Service selecting no pods", func(t *testing.T, objs []Object) {
			set(t, find(t, objs, "Service", "kaas"), "kaas-typo", "spec", "selector", "app.kubernetes.io/name")
		}, CheckServices, []string{"Service/plinth/kaas", "matches the pod labels of no workload"}},
		{"PodDisruptionBudget selecting no pods", func(t *testing.T, objs []Object) {
			set(t, find(t, objs, "PodDisruptionBudget", "gateway"), "envoy", "spec", "selector", "matchLabels", "app.kubernetes.io/name")
		}, CheckBudgets, []string{"PodDisruptionBudget/plinth/gateway", "matches the pod labels of no workload"}},
		{"Service targeting an undeclared port", func(t *testing.T, objs []Object) {
			svc := find(t, objs, "Service", "vagrant-server")
			ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
			ports[0].(map[string]any)["targetPort"] = "grcp"
			set(t, svc, ports, "spec", "ports")
		}, CheckServices, []string{"Service/plinth/vagrant-server", `targets port grcp`}},
		{"container without readiness probe", func(t *testing.T, objs []Object) {
			container(t, objs, "Deployment", "kaas", func(c map[string]any) { delete(c, "readinessProbe") })
		}, CheckContainers, []string{`Deployment/plinth/kaas: containers[0] "kaas": no readinessProbe`}},
		{"container without liveness probe", func(t *testing.T, objs []Object) {
			container(t, objs, "DaemonSet", "lvmd-agent", func(c map[string]any) { delete(c, "livenessProbe") })
		}, CheckContainers, []string{"DaemonSet/plinth/lvmd-agent", "no livenessProbe"}},
		{"container without a memory request", func(t *testing.T, objs []Object) {
			container(t, objs, "Deployment", "gateway", func(c map[string]any) {
				delete(c["resources"].(map[string]any)["requests"].(map[string]any), "memory")
			})
		}, CheckContainers, []string{"Deployment/plinth/gateway", "resources.requests.memory is not set"}},
		{"image :latest", func(t *testing.T, objs []Object) {
			container(t, objs, "Deployment", "auth", func(c map[string]any) { c["image"] = "ghcr.io/plinth-dev/auth:latest" })
		}, CheckContainers, []string{"Deployment/plinth/auth", `floating tag "latest"`}},
		{"image without a tag", func(t *testing.T, objs []Object) {
			container(t, objs, "Deployment", "auth", func(c map[string]any) { c["image"] = "localhost:5000/plinth/auth" })
		}, CheckContainers, []string{"Deployment/plinth/auth", "has no tag"}},
		{"undocumented Secret", func(t *testing.T, objs []Object) {
			container(t, objs, "Deployment", "stats", func(c map[string]any) {
				addEnv(c, map[string]any{"name": "X", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "plinth-nowhere", "key": "k"}}})
			})
		}, nil, []string{`Secret "plinth-nowhere" is neither in the kustomization nor documented`}},
		{"undocumented key of a documented Secret", func(t *testing.T, objs []Object) {
			container(t, objs, "Deployment", "auth", func(c map[string]any) {
				addEnv(c, map[string]any{"name": "X", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "plinth-database", "key": "uri"}}})
			})
		}, nil, []string{`key "uri" of Secret "plinth-database" is not documented`}},
		{"ConfigMap key missing from the generated ConfigMap", func(t *testing.T, objs []Object) {
			o := find(t, objs, "Deployment", "gateway")
			vols, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
			for _, v := range vols {
				if cm, ok := v.(map[string]any)["configMap"].(map[string]any); ok {
					cm["items"] = []any{map[string]any{"key": "envoy.yml", "path": "envoy.yaml"}}
				}
			}
			set(t, o, vols, "spec", "template", "spec", "volumes")
		}, nil, []string{`ConfigMap "envoy-config`, `has no key "envoy.yml"`}},
		{"plugin Secret no Certificate writes", func(t *testing.T, objs []Object) {
			o := find(t, objs, "Service", "cnpgi-plugin")
			a := o.GetAnnotations()
			a["cnpg.io/pluginClientSecret"] = "cnpgi-client"
			o.SetAnnotations(a)
		}, nil, []string{"annotation cnpg.io/pluginClientSecret", `Secret "cnpgi-client"`}},
		{"sidecar Secret nobody documents", func(t *testing.T, objs []Object) {
			container(t, objs, "Deployment", "cnpgi-plugin", func(c map[string]any) {
				for _, e := range c["env"].([]any) {
					if e.(map[string]any)["name"] == "PLINTH_CNPGI_SIDECAR_ENV_SECRET" {
						e.(map[string]any)["value"] = "sidecar-env"
					}
				}
			})
		}, nil, []string{"PLINTH_CNPGI_SIDECAR_ENV_SECRET", `Secret "sidecar-env"`}},
		{"gateway cluster on the wrong port", func(t *testing.T, objs []Object) {
			replaceEnvoy(t, objs, "port_value: 7002", "port_value: 7012")
		}, CheckGateway, []string{"envoy cluster stats: dials stats:7012, want the Service stats:7002"}},
		{"gateway TLS cluster reading an unmounted file", func(t *testing.T, objs []Object) {
			replaceEnvoy(t, objs, "/etc/plinth/lvmd-client/ca.crt", "/etc/ssl/ca.crt")
		}, CheckGateway, []string{"envoy cluster lvmd-agent", `ca.crt is read from "/etc/ssl/ca.crt"`}},
		{"gateway expecting a server name no certificate has", func(t *testing.T, objs []Object) {
			replaceEnvoy(t, objs, "matcher: {exact: cnpgi-plugin}", "matcher: {exact: cnpgi}")
		}, CheckGateway, []string{"envoy cluster cnpgi-plugin", `server name "cnpgi"`}},
		{"gateway config Envoy would refuse", func(t *testing.T, objs []Object) {
			replaceEnvoy(t, objs, "\"/cnct.kaas.api.Cluster/\"}\n                          route: {cluster: kaas,", "\"/cnct.kaas.api.Cluster/\"}\n                          route: {cluster: kaaz,")
		}, CheckGateway, []string{"envoy.yaml in ConfigMap", "envoy-config", "kaaz"}},
		{"gateway without the lvmd client pair", func(t *testing.T, objs []Object) {
			swapSecretVolume(t, objs, "gateway", "lvmd-agent-client-tls", "other-tls")
		}, CheckGateway, []string{"does not mount Secret lvmd-agent-client-tls at /etc/plinth/lvmd-client"}},
		{"gateway reaching auth in plaintext", func(t *testing.T, objs []Object) {
			cm := find(t, objs, "ConfigMap", "envoy-config")
			cfg, _, _ := unstructured.NestedString(cm.Object, "data", "envoy.yaml")
			set(t, cm, withoutTransportSocket(t, cfg, "auth"), "data", "envoy.yaml")
		}, CheckGateway, []string{"envoy cluster auth: no TLS transport socket"}},
		{"gateway reaching auth's public port", func(t *testing.T, objs []Object) {
			replaceEnvoy(t, objs, "address: auth, port_value: 7011", "address: auth, port_value: 7001")
		}, CheckGateway, []string{"envoy cluster auth: dials auth:7001, want the Service auth:7011"}},
		{"auth trusting the pod network again", func(t *testing.T, objs []Object) {
			container(t, objs, "Deployment", "auth", func(c map[string]any) {
				addEnv(c, map[string]any{"name": "PLINTH_AUTH_TRUSTED_PROXIES", "value": "10.244.0.0/16"})
			})
		}, CheckAuthGateway, []string{"Deployment/plinth/auth", "PLINTH_AUTH_TRUSTED_PROXIES is set"}},
		{"auth's gateway listener trusting another service's CA", func(t *testing.T, objs []Object) {
			swapSecretVolume(t, objs, "auth", "auth-gateway-server-tls", "lvmd-agent-server-tls")
		}, CheckAuthGateway, []string{"the gateway listener trusts the CA of lvmd-agent-server-tls"}},
		{"auth's gateway listener without its Service port", func(t *testing.T, objs []Object) {
			svc := find(t, objs, "Service", "auth")
			ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
			set(t, svc, ports[:1], "spec", "ports")
		}, CheckAuthGateway, []string{"Service/plinth/auth: no port 7011"}},
		{"another workload holding the gateway's identity at auth", func(t *testing.T, objs []Object) {
			o := find(t, objs, "Deployment", "stats")
			vols, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
			vols = append(vols, map[string]any{"name": "gw", "secret": map[string]any{"secretName": "auth-gateway-client-tls"}})
			set(t, o, vols, "spec", "template", "spec", "volumes")
		}, CheckAuthGateway, []string{"Deployment/plinth/stats mounts Secret auth-gateway-client-tls"}},
		{"vagrant-runner left on the runc sandbox", func(t *testing.T, objs []Object) {
			container(t, objs, "Deployment", "vagrant-runner", func(c map[string]any) {
				env := c["env"].([]any)
				c["env"] = slices.DeleteFunc(env, func(e any) bool { return e.(map[string]any)["name"] == "PLINTH_VAGRANT_NETNS_SANDBOX" })
			})
		}, CheckRunnerSandbox, []string{"Deployment/plinth/vagrant-runner", `"vagrant-runner": PLINTH_VAGRANT_NETNS_SANDBOX is not set`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := clone(base)
			tc.break_(t, objs)
			s, errs := Decode(objs)
			if tc.check == nil {
				if len(errs) == 0 {
					errs = append(CheckReferences(s, doc), CheckGateway(s)...)
				}
			} else {
				if len(errs) != 0 {
					t.Fatalf("decoding: %v", errs)
				}
				errs = tc.check(s)
			}
			wantError(t, errs, tc.want...)
		})
	}
}

// withoutTransportSocket is cfg with the transport_socket of cluster name (and its comment)
// taken out: that cluster in plaintext.
func withoutTransportSocket(t *testing.T, cfg, name string) string {
	t.Helper()
	start := strings.Index(cfg, "    - name: "+name+"\n")
	if start < 0 {
		t.Fatalf("envoy.yaml has no cluster %s", name)
	}
	end := len(cfg)
	if next := strings.Index(cfg[start+1:], "\n    - name: "); next >= 0 {
		end = start + 1 + next + 1
	}
	block := cfg[start:end]
	from := strings.Index(block, "      # Mutual TLS")
	to := strings.Index(block, "matcher: {exact: "+name+"}\n")
	if from < 0 || to < 0 {
		t.Fatalf("cluster %s has no transport socket to take out", name)
	}
	to += len("matcher: {exact: " + name + "}\n")
	return cfg[:start] + block[:from] + block[to:] + cfg[end:]
}

func replaceEnvoy(t *testing.T, objs []Object, old, new string) {
	t.Helper()
	cm := find(t, objs, "ConfigMap", "envoy-config")
	cfg, _, _ := unstructured.NestedString(cm.Object, "data", "envoy.yaml")
	if n := countOf(cfg, old); n != 1 {
		t.Fatalf("envoy.yaml has %q %d times, want once", old, n)
	}
	if err := unstructured.SetNestedField(cm.Object, replaceOnce(cfg, old, new), "data", "envoy.yaml"); err != nil {
		t.Fatal(err)
	}
}

// swapSecretVolume makes Deployment name's volumes of Secret from mount Secret to instead.
func swapSecretVolume(t *testing.T, objs []Object, name, from, to string) {
	t.Helper()
	o := find(t, objs, "Deployment", name)
	vols, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
	for _, v := range vols {
		if s, ok := v.(map[string]any)["secret"].(map[string]any); ok && s["secretName"] == from {
			s["secretName"] = to
		}
	}
	if err := unstructured.SetNestedSlice(o.Object, vols, "spec", "template", "spec", "volumes"); err != nil {
		t.Fatal(err)
	}
}
