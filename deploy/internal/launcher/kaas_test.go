package launcher

import "testing"

// TestServiceEnvOfAuthAndKaas: under make up auth believes the gateway's x-forwarded-for,
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
	auth := envMap(t, serviceEnv(c, nil, byName["auth"], byName, Infra{}, false))
	if auth["PLINTH_AUTH_TRUSTED_PROXIES"] != "127.0.0.1/32" {
		t.Errorf("auth PLINTH_AUTH_TRUSTED_PROXIES = %q, want the gateway's 127.0.0.1/32", auth["PLINTH_AUTH_TRUSTED_PROXIES"])
	}
	kaas := envMap(t, serviceEnv(c, nil, byName["kaas"], byName, Infra{}, false))
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
