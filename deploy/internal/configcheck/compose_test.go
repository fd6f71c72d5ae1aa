package configcheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/plinth-dev/plinth/deploy/internal/envoygen"
	"github.com/plinth-dev/plinth/services/gateway/routes"
)

const composeFile = "docker-compose.yaml"

// loadCompose loads (a changed copy of) the compose file with an empty environment, so the
// developer's variables cannot change the outcome.
func loadCompose(t *testing.T, content []byte, env map[string]string, opts ...func(*loader.Options)) (*types.Project, error) {
	t.Helper()
	return LoadCompose(context.Background(), filepath.Join(repoRoot(t), composeFile), content, env, opts...)
}

// checkMutated loads the compose file src with old replaced by new and runs every check on it.
func checkMutated(t *testing.T, src []byte, old, new string) error {
	t.Helper()
	changed := mutate(t, src, old, new)
	p, err := loadCompose(t, changed, map[string]string{})
	if err != nil {
		return err
	}
	return checkAll(t, p, changed)
}

// checkAll runs every check of the compose file on a loaded project.
func checkAll(t *testing.T, p *types.Project, content []byte) error {
	t.Helper()
	if err := CheckCompose(p); err != nil {
		return err
	}
	if err := CheckCommandsCovered(p, repoRoot(t)); err != nil {
		return err
	}
	return CheckNoLiteralSecrets(context.Background(), filepath.Join(repoRoot(t), composeFile), content)
}

func TestComposeFileIsValid(t *testing.T) {
	p, err := loadCompose(t, nil, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkAll(t, p, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"postgres", "nats", "auth", "stats", "kaas", "vagrant-server", "vagrant-runner", "lvmd-agent", "cnpgi-plugin", "gateway"} {
		if _, ok := p.Services[want]; !ok {
			t.Errorf("no service %s", want)
		}
	}
	if _, ok := p.Services["ceph"]; ok {
		t.Error("ceph (the dev cluster) runs without --profile ceph")
	}
	// Published ports from ARCHITECTURE.md's table, on loopback only.
	for svc, port := range map[string]uint32{"gateway": 8080, "auth": 7001, "stats": 7002, "kaas": 7003, "vagrant-server": 7004,
		"lvmd-agent": 7005, "cnpgi-plugin": 7006, "postgres": 5432, "nats": 4222} {
		if !publishedAs(NetnsOwner(p, p.Services[svc]), port) {
			t.Errorf("service %s does not publish 127.0.0.1:%d:%d (got %+v)", svc, port, port, NetnsOwner(p, p.Services[svc]).Ports)
		}
	}
	// kaas reaches its machines' API servers at their addresses on the runner's bridge: both
	// share the network namespace machines-net holds, and are still reachable by name.
	for _, svc := range []string{"kaas", "vagrant-runner"} {
		if nm := p.Services[svc].NetworkMode; nm != "service:machines-net" {
			t.Errorf("%s's network_mode is %q, want service:machines-net (the machines are reachable only there)", svc, nm)
		}
	}
	if n := p.Services["machines-net"].Networks["default"]; n == nil || !slices.Contains(n.Aliases, "kaas") || !slices.Contains(n.Aliases, "vagrant-runner") {
		t.Errorf("machines-net does not answer to kaas and vagrant-runner (the gateway dials kaas:7003): %+v", n)
	}

	auth := p.Services["auth"]
	for k, want := range map[string]string{
		"PLINTH_GRPC_ADDR":         "0.0.0.0:7001",
		"PLINTH_ADMIN_ADDR":        "0.0.0.0:7101",
		"PLINTH_DATABASE_URL":      "postgres://plinth@postgres:5432/plinth?sslmode=disable&passfile=/run/secrets/postgres/pgpass",
		"PLINTH_NATS_URL":          "nats://nats:4222",
		"PLINTH_AUTH_GATEWAY_ADDR": "0.0.0.0:7011",
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

	// Only the two services that need it run as root, each with its privileges.
	// lvmd-agent: not privileged (a privileged container gets every capability the kernel
	// knows, and runc refuses it where the engine's bounding set lacks one), but SYS_ADMIN for
	// the device-mapper and loop ioctls and every block device in its device cgroup.
	lv := p.Services["lvmd-agent"]
	if lv.Privileged || strings.Join(lv.CapAdd, ",") != "SYS_ADMIN" || lv.Build.Target != "lvm" {
		t.Errorf("lvmd-agent: privileged %v, cap_add %v, target %q; want SYS_ADMIN only on the lvm target", lv.Privileged, lv.CapAdd, lv.Build.Target)
	}
	if rules := strings.Join(lv.DeviceCgroupRules, ","); rules != "b *:* rwm,c 10:236 rwm,c 10:237 rwm" {
		t.Errorf("lvmd-agent's device cgroup rules %q: want every block device, /dev/mapper/control and /dev/loop-control", rules)
	}
	r := p.Services["vagrant-runner"]
	if r.Privileged || strings.Join(r.CapDrop, ",") != "ALL" || strings.Join(r.CapAdd, ",") != "NET_ADMIN,SYS_ADMIN" {
		t.Errorf("vagrant-runner: privileged %v, cap_drop %v, cap_add %v; want only NET_ADMIN and SYS_ADMIN", r.Privileged, r.CapDrop, r.CapAdd)
	}
	for name, s := range p.Services {
		if s.Privileged {
			t.Errorf("%s is privileged", name)
		}
	}
}

func TestComposeCephProfile(t *testing.T) {
	p, err := loadCompose(t, nil, map[string]string{"PLINTH_STATS_CEPH_URL": "http://ceph:7303"}, loader.WithProfiles([]string{"ceph"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckCompose(p); err != nil {
		t.Fatal(err)
	}
	c, ok := p.Services["ceph"]
	if !ok {
		t.Fatal("--profile ceph has no ceph (the dev cluster)")
	}
	if c.Build == nil || c.Build.Target != "ceph" || c.Privileged || len(c.CapAdd) > 0 || c.HealthCheck == nil {
		t.Errorf("ceph: build %+v, privileged %v, cap_add %v, health check %v; want the ceph stage, no privileges, a health check",
			c.Build, c.Privileged, c.CapAdd, c.HealthCheck)
	}
	stats := p.Services["stats"]
	if got := stats.Environment["PLINTH_STATS_CEPH_URL"]; got == nil || *got != "http://ceph:7303" {
		t.Errorf("PLINTH_STATS_CEPH_URL does not reach stats: %v", got)
	}
	if d, ok := stats.DependsOn["ceph"]; !ok || d.Condition != types.ServiceConditionHealthy || d.Required {
		t.Errorf("stats does not wait for the dev cluster (healthy, not required without the profile): %+v", d)
	}
	// Without the profile nothing names the cluster.
	plain, err := loadCompose(t, nil, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.Services["ceph"]; ok {
		t.Error("ceph runs without --profile ceph")
	}
	if got := plain.Services["stats"].Environment["PLINTH_STATS_CEPH_URL"]; got == nil || *got != "" {
		t.Errorf("stats reads a Ceph without --profile ceph or PLINTH_STATS_CEPH_URL: %v", got)
	}
}

// TestComposeGatewayRunsTheGeneratedConfig: the file the gateway mounts is exactly what envoygen
// writes for docker-compose, and the mutual-TLS material it names is what the compose file
// generates and the backends serve.
func TestComposeGatewayRunsTheGeneratedConfig(t *testing.T) {
	env := envoygen.Compose()
	if env.File != envoyFile {
		t.Fatalf("envoygen writes the compose config to %s, the compose file mounts %s", env.File, envoyFile)
	}
	want, err := envoygen.Render(env, routes.Table, routes.GatewayServices)
	if err != nil {
		t.Fatal(err)
	}
	if got := readRepoFile(t, envoyFile); string(got) != string(want) {
		t.Errorf("%s is not the generated config: run `%s`", envoyFile, envoygen.RegenerateCommand)
	}
	p, err := loadCompose(t, nil, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	gw := p.Services["gateway"]
	if !mountsVolume(gw, "certs", envoygen.ComposeCertDir) {
		t.Errorf("gateway does not mount the certs volume at %s", envoygen.ComposeCertDir)
	}
	init := strings.Join(p.Services["init"].Command, " ")
	// auth: Envoy dials its gateway listener, the one channel whose x-forwarded-for it believes.
	if got, want := p.Services["auth"].Environment["PLINTH_AUTH_GATEWAY_ADDR"], fmt.Sprintf("0.0.0.0:%d", env.Backends["auth"].Port); got == nil || *got != want {
		t.Errorf("auth: PLINTH_AUTH_GATEWAY_ADDR = %v, but Envoy dials auth:%d", got, env.Backends["auth"].Port)
	}
	for backend, prefix := range map[string]string{"lvmd-agent": "PLINTH_LVMD_TLS_", "cnpgi-plugin": "PLINTH_CNPGI_TLS_", "auth": "PLINTH_AUTH_GATEWAY_TLS_"} {
		a := env.Backends[backend]
		if a.TLS == nil {
			t.Fatalf("envoygen reaches %s without mutual TLS", backend)
		}
		dir := path.Dir(a.TLS.CertFile)
		s := p.Services[backend]
		for k, v := range map[string]string{"CERT": dir + "/server.crt", "KEY": dir + "/server.key", "CLIENT_CA": a.TLS.CertFile} {
			if got := s.Environment[prefix+k]; got == nil || *got != v {
				t.Errorf("%s: %s%s = %v, want %s (the pair the gateway verifies and presents)", backend, prefix, k, got, v)
			}
		}
		if !mountsVolume(s, "certs", envoygen.ComposeCertDir) {
			t.Errorf("%s does not mount the certs volume at %s", backend, envoygen.ComposeCertDir)
		}
		if !strings.Contains(init, "-hosts $s") || !strings.Contains(init, backend) {
			t.Errorf("init does not make %s's server certificate for the name %s the gateway verifies", backend, a.TLS.ServerName)
		}
	}
}

func mountsVolume(s types.ServiceConfig, volume, target string) bool {
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Source == volume && v.Target == target {
			return true
		}
	}
	return false
}

// TestComposeNeedsNoUnsetVariable: `docker compose up` works with an empty environment.
func TestComposeNeedsNoUnsetVariable(t *testing.T) {
	if _, err := os.Stat(filepath.Join(repoRoot(t), ".env")); err == nil {
		t.Skip("a .env file would supply variables")
	}
	if _, err := loadCompose(t, nil, map[string]string{}, loader.WithProfiles([]string{"*"})); err != nil {
		t.Fatal(err)
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
			t.Errorf("cluster %s sends to %s, which is not a compose service", c.GetName(), sa.GetAddress())
			continue
		}
		matched++
		// A mutual-TLS cluster reaches the service's TLS listener, a plaintext one its gRPC.
		key := "PLINTH_GRPC_ADDR"
		if c.GetTransportSocket() != nil {
			key = map[string]string{"lvmd-agent": "PLINTH_LVMD_TLS_ADDR", "cnpgi-plugin": "PLINTH_CNPGI_TLS_ADDR", "auth": "PLINTH_AUTH_GATEWAY_ADDR"}[c.GetName()]
		}
		want := fmt.Sprintf("0.0.0.0:%d", sa.GetPortValue())
		if got := s.Environment[key]; key == "" || got == nil || *got != want {
			t.Errorf("cluster %s sends to %s:%d, but that service's %s is %v", c.GetName(), sa.GetAddress(), sa.GetPortValue(), key, got)
		}
	}
	if matched != len(b.GetStaticResources().GetClusters()) || matched == 0 {
		t.Error("not every Envoy cluster points at a compose service")
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
		{"missing database URL", "      PLINTH_DATABASE_URL: postgres://plinth@postgres:5432/plinth?sslmode=disable&passfile=/run/secrets/postgres/pgpass\n", "",
			"service auth: PLINTH_DATABASE_URL is not set"},
		{"gRPC on loopback", "PLINTH_GRPC_ADDR: 0.0.0.0:7001", "PLINTH_GRPC_ADDR: 127.0.0.1:7001", "use 0.0.0.0 in a container"},
		{"gRPC port not published", `- "127.0.0.1:7001:7001"`, `- "127.0.0.1:7009:7009"`, "the gRPC port 7001 is not published"},
		{"database on no service", "postgres://plinth@postgres:5432/", "postgres://plinth@db:5432/", `names host "db"`},
		{"database not awaited", "      postgres-roles: {condition: service_completed_successfully}\n      postgres: {condition: service_healthy}",
			"      postgres-roles: {condition: service_completed_successfully}\n      postgres: {condition: service_started}",
			"does not wait for postgres"},
		{"health check on the wrong path", "127.0.0.1:7101/readyz", "127.0.0.1:7101/healthz", "does not ask 127.0.0.1:7101/readyz"},
		{"trusting an address", "      PLINTH_AUTH_GATEWAY_ADDR: 0.0.0.0:7011\n", "      PLINTH_AUTH_TRUSTED_PROXIES: 172.29.71.10/32\n      PLINTH_AUTH_GATEWAY_ADDR: 0.0.0.0:7011\n",
			"PLINTH_AUTH_TRUSTED_PROXIES=172.29.71.10/32 trusts x-forwarded-for from an address"},
		{"no gateway listener", "      PLINTH_AUTH_GATEWAY_ADDR: 0.0.0.0:7011\n", "", "PLINTH_AUTH_GATEWAY_ADDR is not set"},
		{"gateway listener without mutual TLS", "      PLINTH_AUTH_GATEWAY_TLS_CLIENT_CA: /etc/plinth/certs/auth/client.crt\n", "",
			"PLINTH_AUTH_GATEWAY_TLS_CLIENT_CA is not set"},
		{"envoy config not mounted at -c", "envoy.yaml:/etc/envoy/envoy.yaml:ro", "envoy.yaml:/etc/envoy/other.yaml:ro",
			"nothing is mounted at /etc/envoy/envoy.yaml"},
		{"bind mount of a missing file", "./deploy/envoy/envoy.yaml:", "./deploy/envoy/missing.yaml:", "which does not exist"},
		{"undeclared build arg", "args: {SERVICE: auth, BINARY: auth}", `args: {SERVICE: auth, BINARY: auth, VERSION: "1"}`,
			"build arg VERSION is not declared"},
		{"no such command", "args: {SERVICE: auth, BINARY: auth}", "args: {SERVICE: auth, BINARY: authd}", "holds no Go files"},
		{"missing Dockerfile", "dockerfile: deploy/docker/Dockerfile", "dockerfile: deploy/docker/Containerfile", "no such file"},
		{"literal password", "PLINTH_ADMIN_PASSWORD: ${PLINTH_ADMIN_PASSWORD:-}", "PLINTH_ADMIN_PASSWORD: hunter2",
			"service auth: PLINTH_ADMIN_PASSWORD is written in the file"},
		{"literal Ceph secret", "PLINTH_STATS_CEPH_PASSWORD: ${PLINTH_STATS_CEPH_PASSWORD:-}", "PLINTH_STATS_CEPH_PASSWORD: s3cret",
			"service stats: PLINTH_STATS_CEPH_PASSWORD is written in the file"},
		{"password in a URL", "PLINTH_STATS_CEPH_URL: ${PLINTH_STATS_CEPH_URL:-}\n", "PLINTH_STATS_CEPH_URL: https://admin:pw@mgr:8443\n",
			"holds a URL with a password"},
		{"waiting only for a start", "      auth: {condition: service_healthy}\n      init: {condition: service_completed_successfully}\n      # With --profile ceph",
			"      auth: {condition: service_started}\n      init: {condition: service_completed_successfully}\n      # With --profile ceph",
			`service stats depends on auth with condition "service_started"`},
		{"a required dependency that is not there", "ceph: {condition: service_healthy, required: false}", "ceph: {condition: service_healthy}",
			`service "stats" depends on undefined service "ceph"`},
		{"no health check", "    healthcheck:\n      test: [\"CMD\", \"wget\", \"-q\", \"-O\", \"/dev/null\", \"http://127.0.0.1:7104/readyz\"]",
			"    labels: {x: y}\n    x-healthcheck:\n      test: [\"CMD\", \"wget\", \"-q\", \"-O\", \"/dev/null\", \"http://127.0.0.1:7104/readyz\"]",
			"service vagrant-server has no health check"},
		{"healthy on a one-shot", "      init: {condition: service_completed_successfully}\n      # Not lvmd-agent",
			"      init: {condition: service_healthy}\n      # Not lvmd-agent", "service gateway waits for init to be healthy, but init has no health check"},
		{"a command without a container", "args: {SERVICE: vagrant-server, BINARY: vagrant-runner}", "args: {SERVICE: vagrant-server, BINARY: vagrant-server}",
			"services/vagrant-server/cmd/vagrant-runner has no compose service"},
		{"root image without privileges", "    cap_add: [SYS_ADMIN]\n    device_cgroup_rules:", "    device_cgroup_rules:", "target lvm runs as root, but the service is granted no privileges"},
		{"unknown target", "target: netns", "target: netnz", "build target netnz is not an image stage"},
		{"gateway on a hand-written config", "./deploy/envoy/envoy.yaml:/etc/envoy/envoy.yaml:ro", "./deploy/docker/Dockerfile:/etc/envoy/envoy.yaml:ro",
			"not deploy/envoy/envoy.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantErr(t, checkMutated(t, src, tc.old, tc.new), tc.want) })
	}
}

// TestComposeGoGatewayReachesAuthsGatewayListener: the Go gateway (profile go-gateway) dials
// auth's gateway listener, and one that dials auth's public port is refused: auth would take
// it for every client and count all their failed logins against its address.
func TestComposeGoGatewayReachesAuthsGatewayListener(t *testing.T) {
	profiles := func(o *loader.Options) { o.Profiles = []string{"go-gateway"} }
	p, err := loadCompose(t, nil, map[string]string{}, profiles)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Services["gateway-go"]; !ok {
		t.Fatal("the go-gateway profile has no gateway-go")
	}
	if err := errors.Join(CheckGatewayTrust(p)...); err != nil {
		t.Fatal(err)
	}
	changed := mutate(t, readRepoFile(t, composeFile), "PLINTH_AUTH_ADDR: auth:7011", "PLINTH_AUTH_ADDR: auth:7001")
	if p, err = loadCompose(t, changed, map[string]string{}, profiles); err != nil {
		t.Fatal(err)
	}
	wantErr(t, errors.Join(CheckGatewayTrust(p)...), "service gateway-go: PLINTH_AUTH_ADDR=auth:7001, want auth:7011")
}

func TestComposeNATSUsersMatchTheSuite(t *testing.T) {
	p, err := loadCompose(t, nil, map[string]string{}, func(o *loader.Options) { o.Profiles = []string{"*"} })
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckComposeNATS(p, repoRoot(t)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, from, to, want string }{
		{"no user", "      PLINTH_NATS_USER: stats\n", "", `service stats: PLINTH_NATS_USER "" is not a service user`},
		{"the admin user", "      PLINTH_NATS_USER: kaas\n", "      PLINTH_NATS_USER: admin\n", `service kaas: PLINTH_NATS_USER "admin"`},
		{"another user's password", "      - nats-kaas:/run/secrets/nats:ro\n", "      - nats-auth:/run/secrets/nats:ro\n", "service kaas (NATS user kaas) mounts nats-auth"},
		{"writable password", "      - nats-auth:/run/secrets/nats:ro\n", "      - nats-auth:/run/secrets/nats\n", "read-only false"},
		{"a user left out", " gateway admin; do", " admin; do", "generates passwords for"},
	} {
		content := mutate(t, readRepoFile(t, composeFile), c.from, c.to)
		p, err := loadCompose(t, content, map[string]string{}, func(o *loader.Options) { o.Profiles = []string{"*"} })
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := CheckComposeNATS(p, repoRoot(t)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// volumeAt returns the named volume a service mounts at the longest prefix of file, and file's
// path inside it.
func volumeAt(s types.ServiceConfig, file string) (vol types.ServiceVolumeConfig, rel string, ok bool) {
	for _, v := range s.Volumes {
		if v.Type != types.VolumeTypeVolume {
			continue
		}
		if r, err := filepath.Rel(v.Target, file); err == nil && !strings.HasPrefix(r, "..") && len(v.Target) > len(vol.Target) {
			vol, rel, ok = v, r, true
		}
	}
	return vol, rel, ok
}

// TestComposeGoGatewayReachesCNPGIPlugin: the Go gateway has no mutual-TLS client, so it calls
// cnpgi-plugin on its unix socket: the socket is in a volume of its own (not the plugin's
// state with its WAL store), which the gateway mounts read-only at the path it dials, which
// init mounts first so it starts owned by nonroot (both run as nonroot), and the gateway waits
// for the plugin to be healthy. Seen before: the gateway answered UNAVAILABLE "backend
// cnpgi-plugin is not configured on this gateway".
func TestComposeGoGatewayReachesCNPGIPlugin(t *testing.T) {
	p, err := loadCompose(t, nil, map[string]string{}, loader.WithProfiles([]string{"go-gateway"}))
	if err != nil {
		t.Fatal(err)
	}
	plugin, gw := p.Services["cnpgi-plugin"], p.Services["gateway-go"]
	sock, ok := strings.CutPrefix(*plugin.Environment["PLINTH_GRPC_ADDR"], "unix://")
	if !ok {
		t.Fatalf("cnpgi-plugin's PLINTH_GRPC_ADDR is not a unix socket")
	}
	pv, prel, ok := volumeAt(plugin, sock)
	if !ok {
		t.Fatalf("cnpgi-plugin's socket %s is in no named volume", sock)
	}
	if v, _, _ := volumeAt(plugin, *plugin.Environment["PLINTH_CNPGI_DEFAULT_STORE_DIR"]); v.Source == pv.Source {
		t.Errorf("the socket's volume %s also holds the WAL store: the gateway would see it", pv.Source)
	}
	addr := gw.Environment["PLINTH_GATEWAY_BACKEND_CNPGI_PLUGIN"]
	if addr == nil {
		t.Fatal("gateway-go has no PLINTH_GATEWAY_BACKEND_CNPGI_PLUGIN")
	}
	gsock, ok := strings.CutPrefix(*addr, "unix://")
	if !ok {
		t.Fatalf("gateway-go dials cnpgi-plugin at %q, not its unix socket", *addr)
	}
	gv, grel, ok := volumeAt(gw, gsock)
	if !ok || gv.Source != pv.Source || grel != prel || !gv.ReadOnly {
		t.Errorf("gateway-go dials %s: volume %q (read-only %v) path %q; want %s's %q read-only", gsock, gv.Source, gv.ReadOnly, grel, pv.Source, prel)
	}
	if _, _, ok := volumeAt(p.Services["init"], "/init/"+filepath.Base(gv.Source)+"/x"); !ok {
		t.Errorf("init does not mount %s first (at /init/%s), so it would start owned by root", pv.Source, pv.Source)
	}
	if d := gw.DependsOn["cnpgi-plugin"]; d.Condition != types.ServiceConditionHealthy {
		t.Errorf("gateway-go does not wait for cnpgi-plugin to be healthy: %+v", gw.DependsOn)
	}
}

// TestComposeLvmdVGIsNotMakeUps: lvmd-agent's development VG is named by
// PLINTH_COMPOSE_LVMD_VG (plinth-compose: compose_<project>), never `make up`'s `plinth`, and
// its backing file lives under a directory of that name.
func TestComposeLvmdVGIsNotMakeUps(t *testing.T) {
	for env, want := range map[string]string{"": "compose_plinth", "compose_p2": "compose_p2"} {
		p, err := loadCompose(t, nil, map[string]string{"PLINTH_COMPOSE_LVMD_VG": env})
		if err != nil {
			t.Fatal(err)
		}
		cmd := strings.Join(p.Services["lvmd-agent"].Command, " ")
		if !strings.Contains(cmd, "vg="+want+"\n") || !strings.Contains(cmd, "-dir /var/lib/plinth-lvm/$vg -vg $vg") {
			t.Errorf("PLINTH_COMPOSE_LVMD_VG=%q: lvmd-agent's command does not make VG %s under its own directory:\n%s", env, want, cmd)
		}
	}
}
