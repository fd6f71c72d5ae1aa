package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
)

// composePorts are the ports docker-compose.yaml publishes (before plinth-compose's shift) for
// the services `make compose-up` starts: NATS, Postgres, each service's gRPC and admin port,
// kaas's REST API, Envoy's and the Go gateway's.
var composePorts = []int{4222, 5432, 7001, 7002, 7003, 7004, 7005, 7006, 7101, 7102, 7103, 7104, 7105, 7106, 7107, 7203, 8080, 8081, 8181}

// composeOffset finds a shift in a compose band (bandCompose, bandComposeFaults) under which
// every published port is free.
func composeOffset(t *testing.T, band int) int {
	t.Helper()
	for offset := band; offset >= band-100; offset -= 50 {
		var ps []int
		for _, p := range composePorts {
			ps = append(ps, p+offset)
		}
		if portsFree(ps...) {
			return offset
		}
	}
	t.Fatalf("no port offset in %d-%d with free ports", band-100, band)
	return 0
}

// composeEnv is the environment of docker and plinth-compose: the compose plugin `make
// tools-docker` builds, unless DOCKER_CONFIG names another.
func composeEnv(root string) []string {
	env := os.Environ()
	if os.Getenv("DOCKER_CONFIG") == "" {
		if _, err := os.Stat(filepath.Join(root, "bin/docker-config/cli-plugins/docker-compose")); err == nil {
			env = append(env, "DOCKER_CONFIG="+filepath.Join(root, "bin/docker-config"))
		}
	}
	return env
}

func dockerOut(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// composeStack is a compose project plinth-compose brought up for a test, with the journeys'
// suite pointed at it; it is brought down (with its volumes) when the test ends, unless the
// test did so itself (downDone).
type composeStack struct {
	ctx      context.Context
	env      []string
	root     string
	project  string
	offset   int
	password string   // PLINTH_ADMIN_PASSWORD of the next compose call (the suite's is s.password)
	up       []string // plinth-compose up's arguments
	compose  func(args ...string) (string, error)
	down     func() (string, error)
	downDone bool
	s        *journeySuite
}

// startCompose skips (or fails, strict) without an engine, the compose plugin or root, builds
// plinth-compose, brings docker-compose.yaml up as project prefix-<pid> in band (composeOffset)
// on subnet, checks every service is healthy, and points a journeySuite at its Go gateway and
// published ports. ceph says whether the ceph profile's dev cluster runs (plinth-compose's
// -ceph), with stats reading it.
func startCompose(t *testing.T, prefix string, band int, subnet string, ceph bool) *composeStack {
	root := repoRoot(t)
	env := composeEnv(root)
	// A cold image build (no build cache, a loaded machine) alone has taken 12 minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	// Registered first, so it runs after the clean-up's down below.
	t.Cleanup(cancel)
	if _, err := exec.LookPath("docker"); err != nil {
		skipOrFail(t, "no docker client on PATH")
	}
	if out, err := dockerOut(ctx, env, "version", "--format", "{{.Server.Version}}"); err != nil {
		skipOrFail(t, "no Docker engine answers (tools/docker/dockerd.sh start): %s", out)
	}
	if out, err := dockerOut(ctx, env, "compose", "version"); err != nil {
		skipOrFail(t, "no compose plugin (make tools-docker): %s", out)
	}
	if os.Geteuid() != 0 {
		skipOrFail(t, "the compose stack's lvmd-agent needs a root engine and down detaches loop devices as root")
	}

	bin := filepath.Join(t.TempDir(), "plinth-compose")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./deploy/cmd/plinth-compose")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build plinth-compose: %v\n%s", err, out)
	}
	offset := composeOffset(t, band)
	project := fmt.Sprintf("%s-%d", prefix, os.Getpid())
	password := randomHex(t, 12)
	c := &composeStack{ctx: ctx, env: env, root: root, project: project, offset: offset, password: password}
	run := func(ctx context.Context, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(env, "PLINTH_ADMIN_PASSWORD="+c.password)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	c.compose = func(args ...string) (string, error) { return run(ctx, args...) }
	// down has a deadline of its own: it must clean up after a test that ran out of time.
	c.down = func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		return run(ctx, "down", "-root", root, "-project", project)
	}
	c.up = []string{"up", "-root", root, "-project", project, "-port-offset", strconv.Itoa(offset), "-subnet", subnet, "-wait", "5m",
		"-ceph=" + strconv.FormatBool(ceph)}
	t.Cleanup(func() {
		if !c.downDone {
			if out, err := c.down(); err != nil {
				t.Errorf("plinth-compose down: %v\n%s", err, out)
			}
		}
	})

	start := time.Now()
	out, err := c.compose(c.up...)
	if err != nil {
		// The reason is at the end of a long BuildKit log: said first, so that a CI excerpt
		// that keeps only a log's beginning and end shows it.
		t.Fatalf("plinth-compose up: %v; its last lines:\n%s\n--- all of its output:\n%s", err, lastLines(string(out), 60), out)
	}
	t.Logf("up --wait (build included) in %s, ports shifted by %d", time.Since(start).Round(time.Second), offset)
	gwAddr := "127.0.0.1:" + strconv.Itoa(8081+offset)
	if !strings.Contains(out, "http://"+gwAddr) {
		t.Errorf("up does not print the Go gateway's address %s:\n%s", gwAddr, out)
	}
	ps, err := dockerOut(ctx, env, "ps", "--filter", "label=com.docker.compose.project="+project, "--format", "{{.Label \"com.docker.compose.service\"}} {{.Status}}")
	if err != nil {
		t.Fatal(ps)
	}
	services := []string{"postgres", "nats", "auth", "stats", "kaas", "vagrant-server", "machines-net", "vagrant-runner", "lvmd-agent", "cnpgi-plugin", "gateway-go"}
	if ceph {
		services = append(services, "ceph")
	}
	for _, want := range services {
		ok := false
		for _, l := range strings.Split(ps, "\n") {
			if name, st, _ := strings.Cut(l, " "); name == want && strings.Contains(st, "(healthy)") {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s is not running healthy:\n%s", want, ps)
		}
	}

	// The journeys' suite, pointed at the compose stack: the Go gateway, each service's published
	// ports, and (for the Vagrant journey) the runner's id and vagrant-server token, which
	// compose keeps in the runner and vagrant-tokens volumes.
	s := &journeySuite{password: password, home: t.TempDir()}
	s.endpoints.Gateway = gwAddr
	if err := os.MkdirAll(filepath.Join(s.home, "vagrant-runner"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"id":    volumeFile(t, ctx, env, project, "runner", "id", "0:0"),
		"token": volumeFile(t, ctx, env, project, "vagrant-tokens", "runner", "0:0"),
	} {
		if err := os.WriteFile(filepath.Join(s.home, "vagrant-runner", name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, svc := range []struct {
		name string
		port int
	}{{"auth", 7001}, {"stats", 7002}, {"kaas", 7003}, {"vagrant-server", 7004}, {"lvmd-agent", 7005}, {"cnpgi-plugin", 7006}, {"vagrant-runner", 7007}} {
		s.endpoints.Services = append(s.endpoints.Services, struct {
			Name  string `json:"name"`
			GRPC  string `json:"grpc"`
			Admin string `json:"admin"`
			PID   int    `json:"pid"`
		}{Name: svc.name, GRPC: "127.0.0.1:" + strconv.Itoa(svc.port+offset), Admin: "127.0.0.1:" + strconv.Itoa(svc.port+100+offset)})
	}
	s.gw, err = grpc.NewClient(gwAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.gw.Close() })
	c.s = s
	return c
}

// TestComposeStack: `plinth-compose up` (what `make compose-up` runs) brings docker-compose.yaml
// up with every service healthy in a project of its own; through the compose Go gateway the
// admin logs in, the token opens a call to every service it routes (lvmd-agent over mutual TLS
// with init's client pair, from the gateway and directly), the journeys run (a Vagrant job, an
// lvmd volume's capacity in stats and its backup to S3, a WAL segment archived by cnpgi with its
// event, a kaas cluster made by the containerised runner RUNNING, the dev Ceph in stats),
// Logout makes every
// service refuse the token, and
// `plinth-compose down` leaves no container, volume, network, volume group or loop device.
func TestComposeStack(t *testing.T) {
	t.Parallel()
	c := startCompose(t, "e2e-compose", bandCompose, "172.29.72.0/24", true)
	ctx, env, project, s := c.ctx, c.env, c.project, c.s

	token := s.login(t)
	probes := s.tokenProbes(t)
	type target struct {
		name string
		conn grpc.ClientConnInterface
		p    probe
	}
	var targets []target
	for _, p := range probes {
		targets = append(targets, target{p.name + " through the compose gateway", s.gw, p})
		if addr, _, ok := s.service(p.backend); ok && (p.backend == "stats" || p.backend == "kaas") {
			targets = append(targets, target{p.name + " at " + addr, dialPlain(t, addr), p})
		}
	}
	for _, tg := range targets {
		succeeds(t, tg.conn, tg.p, token)
	}
	if len(probes) < 5 {
		t.Fatalf("only %d services probed through the gateway", len(probes))
	}

	// lvmd-agent over its mutual-TLS port, with the client pair init made in the certs volume.
	lvAddr, _, _ := s.service("lvmd-agent")
	free, err := lvmdpb.NewVGServiceClient(dialMTLS(t, ctx, env, project, "lvmd-agent", lvAddr)).GetFreeBytes(callCtx(t), &lvmdpb.GetFreeBytesRequest{DeviceClass: "dev"})
	if err != nil || free.GetFreeBytes() == 0 {
		t.Errorf("lvmd-agent GetFreeBytes over mutual TLS: %v, %v; want the free bytes of its fresh VG", free, err)
	}

	// A Vagrant user's jobs through the compose gateway, run by the containerised runner: a
	// noop's output streamed back (gRPC and gRPC-Web), `up` and `exec` in a netns machine.
	t.Run("VagrantJob", s.journeyVagrantJob)
	// lvmd-agent through the gateway's mutual-TLS client: a volume's capacity event reaches
	// stats; a volume backed up to an S3 server on the compose network.
	t.Run("LvmdCapacityInStats", s.journeyLvmdCapacity)
	t.Run("LvmdBackup", func(t *testing.T) { journeyLvmdBackup(t, c.s, c.startS3(t)) })
	// A WAL segment of the compose PostgreSQL archived by cnpgi-plugin; its event on NATS.
	c.natsAsAdmin(t)
	t.Run("CNPGIArchive", func(t *testing.T) { journeyStackCNPGIArchive(t, c, "compose") })
	// A kaas cluster on the vagrant provider: its control-plane machine made by the
	// containerised runner, its address through kaas and in stats' node list, RUNNING.
	t.Run("KaasClusterMachines", s.journeyKaasCluster)
	// The ceph profile's dev cluster, read by stats through its dashboard: healthy, its OSD up,
	// through the gateway (fsid from the cluster's own state file in the ceph volume).
	t.Run("DevCephInStats", func(t *testing.T) {
		var state struct {
			FSID string `json:"fsid"`
		}
		if err := json.Unmarshal(volumeFile(t, ctx, env, project, "ceph", "cluster/cluster.json", "65532:65532"), &state); err != nil || state.FSID == "" {
			t.Fatalf("the dev cluster's cluster.json: %v (fsid %q)", err, state.FSID)
		}
		statsReportsCluster(t, s.endpoints.Gateway, s.password, state.FSID)
	})

	auth := authpb.NewAuthServiceClient(s.gw)
	if resp, err := auth.Logout(withToken(callCtx(t), token), &authpb.LogoutRequest{}); err != nil || !resp.GetSuccess() {
		t.Fatalf("Logout through the compose gateway: %v, %v", resp, err)
	}
	loggedOut := time.Now()
	for _, tg := range targets {
		err := eventually(time.Second, 10*time.Millisecond, func() error {
			if err := tg.p.call(withToken(callCtx(t), token), tg.conn); status.Code(err) != codes.Unauthenticated {
				return fmt.Errorf("answers %v", err)
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s %v to a token logged out %s ago", tg.name, err, time.Since(loggedOut).Round(time.Millisecond))
		}
	}
	if ct, err := auth.CheckToken(callCtx(t), &authpb.CheckTokenRequest{Token: token}); err != nil || ct.GetSuccess() {
		t.Errorf("CheckToken of a logged-out token: %v, %v; want success=false", ct, err)
	}

	c.downAndGone(t)
}

// downAndGone runs plinth-compose down and checks nothing of the project is left: no
// container, volume, network or volume group.
func (c *composeStack) downAndGone(t *testing.T) {
	t.Helper()
	out, err := c.down()
	c.downDone = true
	if err != nil {
		t.Fatalf("plinth-compose down: %v\n%s", err, out)
	}
	for _, q := range [][]string{{"ps", "-a"}, {"volume", "ls"}, {"network", "ls"}} {
		left, err := dockerOut(c.ctx, c.env, append(q, "-q", "--filter", "label=com.docker.compose.project="+c.project)...)
		if err != nil || left != "" {
			t.Errorf("docker %s after down: %q, %v", strings.Join(q, " "), left, err)
		}
	}
	if vgs, err := exec.CommandContext(c.ctx, "lvm", "vgs", "--noheadings", "-o", "vg_name").Output(); err == nil {
		if slices.Contains(strings.Fields(string(vgs)), composeVG(c.project)) {
			t.Errorf("the project's volume group is still there after down: %s", vgs)
		}
	}
}

// composeVG is the project's lvmd volume group, as plinth-compose names it (composeup.VG).
func composeVG(project string) string { return "compose_" + strings.ReplaceAll(project, "-", "_") }

// dialMTLS connects to a service's mutual-TLS port with the client pair the compose init made
// in the project's certs volume (read through a throw-away container as nonroot, their owner).
func dialMTLS(t *testing.T, ctx context.Context, env []string, project, service, addr string) *grpc.ClientConn {
	t.Helper()
	read := func(name string) []byte {
		return volumeFile(t, ctx, env, project, "certs", service+"/"+name, "65532:65532")
	}
	pair, err := tls.X509KeyPair(read("client.crt"), read("client.key"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(read("server.crt")) {
		t.Fatal("no server certificate in the certs volume")
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{pair}, RootCAs: roots, ServerName: service, MinVersion: tls.VersionTLS12,
	})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// volumeFile reads a file of one of the project's volumes through a throw-away container, as
// user (the file's owner: the secrets are 0600).
func volumeFile(t *testing.T, ctx context.Context, env []string, project, volume, path, user string) []byte {
	t.Helper()
	out, err := dockerOut(ctx, env, "run", "--rm", "--user", user, "-v", project+"_"+volume+":/v:ro",
		"--entrypoint", "cat", "busybox:1.37-musl", "/v/"+path)
	if err != nil {
		t.Fatalf("read %s from the %s volume: %v: %s", path, volume, err, out)
	}
	return []byte(out + "\n")
}

// lastLines is the end of a command's output: its last n lines.
func lastLines(out string, n int) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
