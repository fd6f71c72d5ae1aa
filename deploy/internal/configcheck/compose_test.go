package configcheck

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
)

const composeFile = "docker-compose.yaml"

// loadCompose loads (a changed copy of) the compose file with an empty environment, so the
// developer's variables cannot change the outcome.
func loadCompose(t *testing.T, content []byte, env map[string]string) (*types.Project, error) {
	t.Helper()
	return LoadCompose(context.Background(), filepath.Join(repoRoot(t), composeFile), content, env)
}

func TestComposeFileIsValid(t *testing.T) {
	p, err := loadCompose(t, nil, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckCompose(p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"postgres", "nats", "auth", "gateway"} {
		if _, ok := p.Services[want]; !ok {
			t.Errorf("no service %s", want)
		}
	}
	// Published ports from ARCHITECTURE.md's table, on loopback only.
	for svc, port := range map[string]uint32{"gateway": 8080, "auth": 7001, "postgres": 5432, "nats": 4222} {
		if !publishedAs(p.Services[svc], port) {
			t.Errorf("service %s does not publish 127.0.0.1:%d:%d (got %+v)", svc, port, port, p.Services[svc].Ports)
		}
	}

	auth := p.Services["auth"]
	for k, want := range map[string]string{
		"PLINTH_GRPC_ADDR":            "0.0.0.0:7001",
		"PLINTH_ADMIN_ADDR":           "0.0.0.0:7101",
		"PLINTH_DATABASE_URL":         "postgres://postgres@postgres:5432/plinth?sslmode=disable",
		"PLINTH_NATS_URL":             "nats://nats:4222",
		"PLINTH_AUTH_TRUSTED_PROXIES": "172.29.71.10/32",
	} {
		if got := auth.Environment[k]; got == nil || *got != want {
			t.Errorf("auth: %s = %v, want %s", k, got, want)
		}
	}
	if b := auth.Build; b == nil || b.Dockerfile != "deploy/docker/Dockerfile" || b.Context != repoRoot(t) || *b.Args["SERVICE"] != "auth" {
		t.Errorf("auth is not built from the repository root with deploy/docker/Dockerfile: %+v", b)
	}

	gw := p.Services["gateway"]
	mounted := false
	for _, v := range gw.Volumes {
		mounted = mounted || (v.Source == filepath.Join(repoRoot(t), envoyFile) && v.Target == "/etc/envoy/envoy.yaml" && v.ReadOnly)
	}
	if !mounted {
		t.Errorf("gateway does not mount %s read-only at /etc/envoy/envoy.yaml: %+v", envoyFile, gw.Volumes)
	}
	if d := gw.DependsOn["auth"]; d.Condition != types.ServiceConditionHealthy {
		t.Errorf("gateway does not wait for auth to be healthy (ext_authz needs it): %+v", gw.DependsOn)
	}
}

func publishedAs(s types.ServiceConfig, port uint32) bool {
	for _, pc := range s.Ports {
		if pc.Target == port && pc.Published == fmt.Sprint(port) && pc.HostIP == "127.0.0.1" {
			return true
		}
	}
	return false
}

func TestComposeInterpolatesAdminPassword(t *testing.T) {
	p, err := loadCompose(t, nil, map[string]string{"PLINTH_ADMIN_PASSWORD": "s3cret-pw"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Services["auth"].Environment["PLINTH_ADMIN_PASSWORD"]; got == nil || *got != "s3cret-pw" {
		t.Errorf("PLINTH_ADMIN_PASSWORD does not reach auth: %v", got)
	}
}

// TestComposeMatchesEnvoy: each Envoy cluster that points at a service of the compose file uses
// that service's gRPC port, and the gateway image is the Envoy release whose API the config is
// validated against.
func TestComposeMatchesEnvoy(t *testing.T) {
	p, err := loadCompose(t, nil, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseEnvoy(readRepoFile(t, envoyFile))
	if err != nil {
		t.Fatal(err)
	}
	matched := 0
	for _, c := range b.GetStaticResources().GetClusters() {
		sa := c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
		s, ok := p.Services[sa.GetAddress()]
		if !ok {
			continue // a service that has not landed yet (the compose template)
		}
		matched++
		want := fmt.Sprintf("0.0.0.0:%d", sa.GetPortValue())
		if got := s.Environment["PLINTH_GRPC_ADDR"]; got == nil || *got != want {
			t.Errorf("cluster %s sends to %s:%d, but that service's PLINTH_GRPC_ADDR is %v", c.GetName(), sa.GetAddress(), sa.GetPortValue(), got)
		}
	}
	if matched == 0 {
		t.Error("no Envoy cluster points at a compose service")
	}

	version := requiredVersion(t, "deploy/go.mod", "github.com/envoyproxy/go-control-plane/envoy")
	minor := strings.Join(strings.SplitN(version, ".", 3)[:2], ".") // v1.40
	if want := "envoyproxy/envoy:" + minor + "-latest"; p.Services["gateway"].Image != want {
		t.Errorf("gateway image %s; configcheck validates against the %s API: use %s (or move both)", p.Services["gateway"].Image, version, want)
	}
}

// requiredVersion is the version of module mod that go.mod file (in the repository) requires.
func requiredVersion(t *testing.T, file, mod string) string {
	t.Helper()
	for _, l := range strings.Split(string(readRepoFile(t, file)), "\n") {
		if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "require ")); len(f) >= 2 && f[0] == mod {
			return f[1]
		}
	}
	t.Fatalf("%s does not require %s", file, mod)
	return ""
}

// TestComposeRejects proves the checks bite: each broken copy must be refused.
func TestComposeRejects(t *testing.T) {
	src := readRepoFile(t, composeFile)
	for _, tc := range []struct{ name, old, new, want string }{
		{"depends on an unknown service", "auth: {condition: service_healthy}", "authz: {condition: service_healthy}",
			`depends on undefined service "authz"`},
		{"key outside the Compose Spec", "      interval: 2s", "      intervall: 2s", "intervall"},
		{"missing database URL", "      PLINTH_DATABASE_URL: postgres://postgres@postgres:5432/plinth?sslmode=disable\n", "",
			"service auth: PLINTH_DATABASE_URL is not set"},
		{"gRPC on loopback", "PLINTH_GRPC_ADDR: 0.0.0.0:7001", "PLINTH_GRPC_ADDR: 127.0.0.1:7001", "use 0.0.0.0 in a container"},
		{"gRPC port not published", `- "127.0.0.1:7001:7001"`, `- "127.0.0.1:7009:7009"`, "the gRPC port 7001 is not published"},
		{"database on no service", "postgres://postgres@postgres:5432/", "postgres://postgres@db:5432/", `names host "db"`},
		{"database not awaited", "      postgres: {condition: service_healthy}", "      postgres: {condition: service_started}",
			"does not wait for postgres"},
		{"health check on the wrong path", "127.0.0.1:7101/readyz", "127.0.0.1:7101/healthz", "does not ask 127.0.0.1:7101/readyz"},
		{"trusting the whole network", "PLINTH_AUTH_TRUSTED_PROXIES: 172.29.71.10/32", "PLINTH_AUTH_TRUSTED_PROXIES: 172.29.71.0/24",
			"not exactly a gateway's fixed address"},
		{"no trusted proxies", "      PLINTH_AUTH_TRUSTED_PROXIES: 172.29.71.10/32\n", "", "PLINTH_AUTH_TRUSTED_PROXIES is not set"},
		{"gateway outside the subnet", "ipv4_address: 172.29.71.10", "ipv4_address: 172.29.72.10", "not in a subnet"},
		{"envoy config not mounted at -c", "envoy.yaml:/etc/envoy/envoy.yaml:ro", "envoy.yaml:/etc/envoy/other.yaml:ro",
			"nothing is mounted at /etc/envoy/envoy.yaml"},
		{"bind mount of a missing file", "./deploy/envoy/envoy.yaml:", "./deploy/envoy/missing.yaml:", "which does not exist"},
		{"undeclared build arg", "args: {SERVICE: auth, BINARY: auth}", `args: {SERVICE: auth, BINARY: auth, VERSION: "1"}`,
			"build arg VERSION is not declared"},
		{"no such command", "args: {SERVICE: auth, BINARY: auth}", "args: {SERVICE: auth, BINARY: authd}", "holds no Go files"},
		{"missing Dockerfile", "dockerfile: deploy/docker/Dockerfile", "dockerfile: deploy/docker/Containerfile", "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := loadCompose(t, mutate(t, src, tc.old, tc.new), map[string]string{})
			if err == nil {
				err = CheckCompose(p)
			}
			wantErr(t, err, tc.want)
		})
	}
}
