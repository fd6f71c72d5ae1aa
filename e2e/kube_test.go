package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/kubetest"
	"github.com/plinth-dev/plinth/libs/kubetest/kubelocal"
	"github.com/plinth-dev/plinth/libs/storage/s3test"
)

// kubeStack is deploy/k8s/overlays/local running on make kube-up's cluster for a test.
type kubeStack struct {
	// t is the test the stack belongs to: what outlives a subtest (a port forward) ends with it.
	t       *testing.T
	ctx     context.Context
	root    string
	cluster *kubelocal.Cluster
	kubectl string
	// plinthKube is the plinth-kube binary the stack was started with (make kube-demo runs it).
	plinthKube string
	s          *journeySuite
	// pgArchive is the in-cluster S3's WAL and backup bucket, once a check has reached it
	// (one port-forward for the suite, however often a check polls).
	pgArchive *s3Store
}

// run runs kubectl against the cluster.
func (k *kubeStack) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := k.try(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (k *kubeStack) try(args ...string) (string, error) {
	out, err := k.command(args...).CombinedOutput()
	return string(out), err
}

// command is kubectl against the cluster, run in the repository.
func (k *kubeStack) command(args ...string) *exec.Cmd {
	cmd := exec.CommandContext(k.ctx, k.kubectl, args...)
	cmd.Dir = k.root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.cluster.KubeconfigPath)
	return cmd
}

var versitygwPin = regexp.MustCompile(`(?m)^\s*github\.com/versity/versitygw (v\S+)`)

// kubeS3Image is the name make kube-up gives the image of overlays/local's S3 server
// (KUBE_S3_IMAGE): versitygw's version as tools/s3/go.mod pins it.
func kubeS3Image(t *testing.T, root string) string {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join(root, "tools/s3/go.mod"))
	m := versitygwPin.FindSubmatch(mod)
	if err != nil || m == nil {
		t.Fatalf("versitygw's pin in tools/s3/go.mod: %v", err)
	}
	return "plinth.local/versitygw:" + string(m[1])
}

// kubeBinImage is make kube-up's -program for the Kubernetes binaries kaas's machines run
// (KUBE_BIN_IMAGE, overlays/local kaas.yaml): what make tools-kaas builds.
func kubeBinImage(t *testing.T, bin string) string {
	t.Helper()
	var programs []string
	for _, glob := range []string{"kube-apiserver-v*", "kube-controller-manager-v*", "kwok"} {
		found, _ := filepath.Glob(filepath.Join(bin, glob))
		if len(found) == 0 {
			skipOrFail(t, "no %s in %s: make tools-kaas", glob, bin)
		}
		programs = append(programs, found...)
	}
	return "plinth.local/kube-bin:" + kubelocal.Version + "=" + strings.Join(programs, ",")
}

// startKube runs what make kube-up runs: the suite's images built (plinth-compose images), then
// plinth-kube up — the cluster with them, cert-manager and the lvmd volume group, the Secrets
// and overlays/local applied as deploy/k8s/README.md tells a user, every workload rolled out.
func startKube(t *testing.T) *kubeStack {
	root := repoRoot(t)
	env := composeEnv(root)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	t.Cleanup(cancel)
	if os.Geteuid() != 0 {
		skipOrFail(t, "make kube-up's cluster needs root (cgroups, mounts, network)")
	}
	if out, err := dockerOut(ctx, env, "version", "--format", "{{.Server.Version}}"); err != nil {
		skipOrFail(t, "the suite's images are built with Docker, and no engine answers (tools/docker/dockerd.sh start): %s", out)
	}
	kubectl := kubetest.Binary(t, "kubectl-"+kubelocal.Version)
	s3Server, err := s3test.Binary()
	if err != nil {
		skipOrFail(t, "%v", err)
	}
	dir := filepath.Join(t.TempDir(), "kube")
	// What plinth-kube up runs, checked before minutes of image builds.
	opts := kubelocal.Options{Dir: dir, BinDir: filepath.Dir(kubectl), CertManager: true, Storage: true, VolumeGroup: "plinth_kube"}
	if err := kubelocal.Check(opts); err != nil {
		skipOrFail(t, "%v", err)
	}

	images := filepath.Join(t.TempDir(), "kube.tar")
	compose, plinthKube := filepath.Join(t.TempDir(), "plinth-compose"), filepath.Join(t.TempDir(), "plinth-kube")
	password := randomHex(t, 12)
	run := func(ctx context.Context, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir, cmd.Env = root, append(env, "PLINTH_ADMIN_PASSWORD="+password)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err != nil {
			return stdout.String(), fmt.Errorf("%s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String(), nil
	}
	for _, args := range [][]string{
		{"go", "build", "-o", compose, "./deploy/cmd/plinth-compose"},
		{"go", "build", "-o", plinthKube, "./deploy/cmd/plinth-kube"},
		// make images
		{compose, "images", "-root", root, "-out", images},
	} {
		start := time.Now()
		if _, err := run(ctx, args...); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", strings.Join(args[:2], " "), time.Since(start).Round(time.Second))
	}

	// make kube-up: the cluster, the images, cert-manager, the volume group, then the overlay
	// with the Secrets deploy/k8s/README.md lists, every workload rolled out.
	start := time.Now()
	out, err := run(ctx, plinthKube, "up", "-dir", dir, "-bin", filepath.Dir(kubectl), "-root", root, "-image", images,
		"-program", kubeS3Image(t, root)+"="+s3Server, "-program", kubeBinImage(t, filepath.Dir(kubectl)), "-wait-machine", "20m")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if _, err := run(ctx, plinthKube, "down", "-dir", dir); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "KUBECONFIG=" + filepath.Join(dir, "kubeconfig"); !strings.Contains(out, want) {
		t.Errorf("plinth-kube up printed %q, want %s", out, want)
	}
	t.Logf("plinth-kube up (cluster, images, cert-manager, overlay rolled out): %s", time.Since(start).Round(time.Second))
	c, err := kubelocal.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := &kubeStack{t: t, ctx: ctx, root: root, cluster: c, kubectl: kubectl, plinthKube: plinthKube}
	start = time.Now()
	for _, w := range []string{"deploy/postgres", "deploy/nats", "deploy/s3", "deploy/auth", "deploy/stats", "deploy/kaas", "deploy/vagrant-server",
		"deploy/vagrant-runner", "deploy/cnpgi-plugin", "deploy/gateway", "daemonset/lvmd-agent"} {
		if out, err := k.try("-n", "plinth", "rollout", "status", w, "--timeout=5m"); err != nil {
			t.Errorf("%s did not become ready: %v\n%s", w, err, out)
		}
	}
	if t.Failed() {
		t.Logf("pods:\n%s\nevents:\n%s", k.run(t, "-n", "plinth", "get", "pods", "-o", "wide"),
			k.run(t, "-n", "plinth", "get", "events", "--sort-by=.lastTimestamp"))
		t.FailNow()
	}
	t.Logf("every workload confirmed ready in %s", time.Since(start).Round(time.Second))
	restarts := k.run(t, "-n", "plinth", "get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.name}{" "}{range .status.containerStatuses[*]}{.restartCount}{" "}{end}{"\n"}{end}`)
	for _, line := range strings.Split(strings.TrimSpace(restarts), "\n") {
		f := strings.Fields(line)
		for _, n := range f[1:] {
			if n != "0" {
				t.Errorf("pod %s restarted: %s", f[0], line)
			}
		}
	}

	s := &journeySuite{password: password, home: t.TempDir()}
	// Every service runs in the cluster; the journeys reach them only through the gateway.
	for _, name := range []string{"auth", "stats", "kaas", "vagrant-server", "lvmd-agent", "cnpgi-plugin", "vagrant-runner"} {
		s.endpoints.Services = append(s.endpoints.Services, struct {
			Name  string `json:"name"`
			GRPC  string `json:"grpc"`
			Admin string `json:"admin"`
			PID   int    `json:"pid"`
		}{Name: name})
	}
	k.s = s
	k.connectGateway(t)
	return k
}

// vagrantRunner points the Vagrant journey at the cluster's runner: its admin port forwarded,
// its id (in its state directory) and the login token plinth-kube up gave it in the Secret
// plinth-vagrant-runner (bootstrapped as services/vagrant-server/README.md says).
func (k *kubeStack) vagrantRunner(t *testing.T) {
	t.Helper()
	dir := filepath.Join(k.s.home, "vagrant-runner")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	token := []byte(k.secretValue(t, "plinth-vagrant-runner", "token"))
	admin := k.portForward(t, "deploy/vagrant-runner", 7107)
	checkRunnerRegistered(t, admin)
	id := k.output(t, nil, "-n", "plinth", "exec", "deploy/vagrant-runner", "--", "cat", "/var/lib/vagrant-runner/id") // stdout only
	for name, b := range map[string][]byte{"id": id, "token": token} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i := range k.s.endpoints.Services {
		if k.s.endpoints.Services[i].Name == "vagrant-runner" {
			k.s.endpoints.Services[i].Admin = admin
		}
	}
}

// connectGateway forwards a loopback port to the gateway Service (to one of its pods, as
// kubectl port-forward does) and points the journeys' connection at it.
func (k *kubeStack) connectGateway(t *testing.T) {
	t.Helper()
	k.s.endpoints.Gateway = k.portForward(t, "svc/gateway", 8080)
	gw, err := grpc.NewClient(k.s.endpoints.Gateway, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	k.t.Cleanup(func() { _ = gw.Close() })
	k.s.gw = gw
}

// portForward forwards a free loopback port to target's port (kubetest.PortForward) and returns
// that address; it stops when the stack's test ends (or the pod it forwards to goes).
func (k *kubeStack) portForward(t *testing.T, target string, port int) string {
	t.Helper()
	addr, stop, err := kubetest.PortForward(k.ctx, k.kubectl, k.cluster.KubeconfigPath, "plinth", target, port)
	if err != nil {
		t.Fatal(err)
	}
	k.t.Cleanup(stop)
	return addr
}

// TestKubeSuite: deploy/k8s/overlays/local on make kube-up's cluster (a real kubelet, kube-proxy,
// CoreDNS and cert-manager, the suite's images as make images builds them), applied the way
// deploy/k8s/README.md tells a user: every Deployment rolls out, the lvmd-agent DaemonSet is
// Ready, no container restarted; through the gateway Service the admin logs in and reaches
// every service; an lvmd volume made through the gateway shows in stats and one is backed up to
// the in-cluster S3; a Vagrant job's output
// comes back from the runner's pod (a command in a netns machine too); a WAL segment of the
// cluster's PostgreSQL is archived by cnpgi-plugin into the in-cluster S3 with its event; a
// kaas cluster's control-plane machine is made by the runner in kaas's pod and RUNNING;
// TopoLVM's node plugins v0.11 and v0.41 drive the lvmd-agent DaemonSet
// (testdata/topolvm-node.yaml, testdata/topolvm041-node.yaml); every
// workload's pods deleted in turn and the kubelet killed once, all comes back Ready, no job or
// event handed over just before is lost and the token still works; after Logout every service
// refuses the token; kube-down undoes it all.
func TestKubeSuite(t *testing.T) {
	t.Parallel()
	k := startKube(t)
	s := k.s
	token := s.login(t)
	probes := s.tokenProbes(t)
	if len(probes) < 5 {
		t.Fatalf("only %d services probed through the gateway", len(probes))
	}
	for _, p := range probes {
		succeeds(t, s.gw, p, token)
	}
	// lvmd-agent (the DaemonSet, on kube-up's volume group) through the gateway's mutual-TLS
	// client with cert-manager's pair: a volume made and removed, its capacity events in stats.
	t.Run("LvmdCapacityInStats", s.journeyLvmdCapacity)
	// A volume backed up by the DaemonSet's agent to the in-cluster S3 (its Service's name).
	t.Run("LvmdBackup", func(t *testing.T) { journeyLvmdBackup(t, s, k.s3(t, "lvmd-backups")) })
	// A Vagrant user's jobs through the gateway, run by the runner's pod (netns machines in
	// its network namespace, overlays/local/runner.yaml): a noop's output streamed back over
	// gRPC and gRPC-Web, `up` and `exec` in a machine.
	k.vagrantRunner(t)
	t.Run("VagrantJob", s.journeyVagrantJob)
	// A WAL segment of the cluster's PostgreSQL archived by the cnpgi-plugin Deployment
	// through the gateway (mutual TLS with cert-manager's pair) into the in-cluster S3; its
	// event on the cluster's NATS.
	k.natsAsAdmin(t)
	t.Run("CNPGIArchive", func(t *testing.T) { journeyStackCNPGIArchive(t, k, "kube") })
	// A kaas cluster on the vagrant provider: its control-plane machine made by the runner in
	// kaas's pod (overlays/local kaas.yaml), its address through kaas and in stats' node list,
	// RUNNING.
	t.Run("KaasClusterMachines", s.journeyKaasCluster)
	// TopoLVM's node plugin (its Go module's) against the lvmd-agent DaemonSet's socket: a
	// LogicalVolume becomes an LV, is resized and removed; the Node carries lvmd's capacity.
	t.Run("TopoLVMNodePlugin", k.checkTopoLVMNodePlugin)
	// TopoLVM v0.41's node plugin (today's lvmd wire, the topolvm.io group) the same way:
	// sub-GiB sizes in bytes rounded to the extent, a resize, a snapshot LogicalVolume's
	// CreateLVSnapshot (refused on this thick class), the capacity annotations.
	t.Run("TopoLVM041NodePlugin", k.checkTopoLVM041NodePlugin)
	// Faults: each of the suite's workloads loses its pods in turn (with work handed to it just
	// before), then the kubelet is killed once; every pod comes back Ready, no job or event is
	// lost and the token still opens every service.
	t.Run("PodsDeletedAndKubeletKilled", func(t *testing.T) { k.checkFaultsLoseNothing(t, token, probes) })
	// CloudNativePG's operator (make kube-demo): the example Cluster with cnpgi-plugin's
	// sidecar archiving its WAL to the in-cluster S3, a plugin Backup and a ScheduledBackup.
	t.Run("CNPGOperator", k.checkCNPGOperator)

	auth := authpb.NewAuthServiceClient(s.gw)
	if resp, err := auth.Logout(withToken(callCtx(t), token), &authpb.LogoutRequest{}); err != nil || !resp.GetSuccess() {
		t.Fatalf("Logout through the gateway Service: %v, %v", resp, err)
	}
	loggedOut := time.Now()
	for _, p := range probes {
		err := eventually(2*time.Second, 10*time.Millisecond, func() error {
			if err := p.call(withToken(callCtx(t), token), s.gw); status.Code(err) != codes.Unauthenticated {
				return fmt.Errorf("answers %v", err)
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s %v to a token logged out %s ago", p.name, err, time.Since(loggedOut).Round(time.Millisecond))
		}
	}
}
