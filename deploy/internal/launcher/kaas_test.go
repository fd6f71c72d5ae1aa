package launcher

import "testing"

// TestServiceEnvOfAuthAndKaas: under make up auth believes the x-forwarded-for of the gateway
// alone, on its private socket (issue #36: not of every client on 127.0.0.1),
// and kaas finds the Kubernetes binaries under the root and the build's status file.
func TestServiceEnvOfAuthAndKaas(t *testing.T) {
	found := []Binary{
		{Service: "auth", Name: "auth"},
		{Service: "vagrant-server", Name: "vagrant-server"},
		{Service: "kaas", Name: "kaas"},
	}
	placed, _, err := Plan(found, "/h", 0, allFree)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Placement{}
	for _, p := range placed {
		byName[p.Spec.Binary] = p
	}
	c := Config{Root: "/src/plinth", Home: "/h"}
	auth := envMap(t, ChildEnv(c, byName["auth"], byName, Infra{}, false))
	// No address is a trusted proxy (every local account connects from 127.0.0.1); the
	// gateway reaches auth on the private socket whose x-forwarded-for auth believes.
	if v, ok := auth["PLINTH_AUTH_TRUSTED_PROXIES"]; ok {
		t.Errorf("auth PLINTH_AUTH_TRUSTED_PROXIES = %q: loopback clients could pick their address", v)
	}
	if auth["PLINTH_AUTH_GATEWAY_ADDR"] != "unix:///h/auth-gateway.sock" {
		t.Errorf("auth PLINTH_AUTH_GATEWAY_ADDR = %q, want unix:///h/auth-gateway.sock", auth["PLINTH_AUTH_GATEWAY_ADDR"])
	}
	gw := gatewayEnv(c, byName)
	if gw["PLINTH_AUTH_ADDR"] != "unix:///h/auth-gateway.sock" {
		t.Errorf("gateway PLINTH_AUTH_ADDR = %q, want auth's gateway socket", gw["PLINTH_AUTH_ADDR"])
	}
	kaas := envMap(t, ChildEnv(c, byName["kaas"], byName, Infra{}, false))
	for k, want := range map[string]string{
		"PLINTH_KAAS_VAGRANT_KUBE_BIN_DIR":      "/src/plinth/bin",
		"PLINTH_KAAS_VAGRANT_KUBE_BUILD_STATUS": "/h/kaas/kube-build.json",
		"PLINTH_KAAS_VAGRANT_ADDR":              "127.0.0.1:7004",
	} {
		if kaas[k] != want {
			t.Errorf("kaas %s = %q, want %q", k, kaas[k], want)
		}
	}
}
