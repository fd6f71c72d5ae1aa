package k8scheck

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"testing"
)

const localOverlay = "../../k8s/overlays/local"

// overlays/local (make kube-up's) passes the checks the base passes, but for the Envoy
// contract (the Go gateway replaces Envoy there), and runs PostgreSQL and NATS besides.
func TestLocalOverlay(t *testing.T) {
	objs := build(t, localOverlay)
	s := decode(t, objs)
	runChecks(t, s, documented(t), false)
	var names []string
	for _, w := range s.Workloads {
		names = append(names, w.GetName())
	}
	for _, want := range []string{"auth", "stats", "kaas", "vagrant-server", "vagrant-runner", "lvmd-agent", "cnpgi-plugin", "gateway", "postgres", "nats"} {
		if !slices.Contains(names, want) {
			t.Errorf("no workload %s in %v", want, names)
		}
	}
	checkGoGatewayReachesAuth(t, s)
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "envoy-config" {
			t.Error("envoy-config is still in the build: nothing reads it")
		}
	}
}

// checkGoGatewayReachesAuth: the Go gateway of overlays/local dials auth's gateway listener
// with mutual TLS as Envoy does in the base: PLINTH_AUTH_ADDR names the port of
// Contract's auth entry, and PLINTH_GATEWAY_BACKEND_TLS_DIR/auth/ holds the gateway's client
// pair (client.crt, client.key) and the CA auth's server certificate chains to (server.crt),
// from the Secret of Contract's auth entry.
func checkGoGatewayReachesAuth(t *testing.T, s *Set) {
	t.Helper()
	be := AuthGatewayBackend()
	w, err := s.Workload("Deployment", "gateway")
	if err != nil {
		t.Fatal(err)
	}
	c := w.Template.Spec.Containers[0]
	env := envOf(c)
	if want := fmt.Sprintf("auth:%d", be.Port); env["PLINTH_AUTH_ADDR"] != want {
		t.Errorf("PLINTH_AUTH_ADDR = %q, want %s (auth's gateway listener)", env["PLINTH_AUTH_ADDR"], want)
	}
	dir := env["PLINTH_GATEWAY_BACKEND_TLS_DIR"]
	want := map[string]string{"tls.crt": "auth/client.crt", "tls.key": "auth/client.key", "ca.crt": "auth/server.crt"}
	got := map[string]string{}
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) != path.Clean(dir) {
			continue
		}
		for _, v := range w.Template.Spec.Volumes {
			if v.Name != m.Name || v.Projected == nil {
				continue
			}
			for _, src := range v.Projected.Sources {
				if src.Secret != nil && src.Secret.Name == be.Secret {
					for _, it := range src.Secret.Items {
						got[it.Key] = it.Path
					}
				}
			}
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("PLINTH_GATEWAY_BACKEND_TLS_DIR %q holds %v of Secret %s, want %v", dir, got, be.Secret, want)
	}
}
