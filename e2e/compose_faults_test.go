package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	vagrantpb "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
)

// composeKilled are the long-running services of the compose stack, in the order
// TestComposeFaults crashes them: each has `restart: unless-stopped` in docker-compose.yaml.
var composeKilled = []string{"auth", "stats", "kaas", "vagrant-server", "vagrant-runner", "cnpgi-plugin", "lvmd-agent", "gateway-go", "nats", "postgres"}

// TestComposeFaults: in a compose project of its own (bandComposeFaults, 172.29.73.0/24), with
// the admin logged in through the Go gateway and a Vagrant job run, each long-running service
// in turn is crashed (SIGKILL to its container's main process from the host: `docker kill`
// marks a container stopped by hand, which Docker's restart policies leave stopped by design)
// → its restart policy brings it back, its healthcheck (/readyz)
// turns healthy and the journey's calls work again through the gateway with the same token; a
// token logged out is still refused everywhere after auth is crashed and restarted; `docker
// compose down` without -v then up keeps the admin's password (a different
// PLINTH_ADMIN_PASSWORD at the second up changes nothing), the job and cnpgi's WAL catalog; a
// WAL segment archived while NATS is frozen has its event published once NATS answers again
// (the outbox); plinth-compose down
// leaves nothing. Times to healthy and to working calls are logged, not asserted.
func TestComposeFaults(t *testing.T) {
	t.Parallel()
	c := startCompose(t, "e2e-compose-faults", bandComposeFaults, "172.29.73.0/24", false)
	s := c.s
	deadline := time.Now().Add(10 * time.Minute)

	token := s.login(t)
	probes := s.tokenProbes(t)
	c.natsAsAdmin(t)
	lvAddr, _, _ := s.service("lvmd-agent")
	lvmd := lvmdpb.NewVGServiceClient(dialMTLS(t, c.ctx, c.env, c.project, "lvmd-agent", lvAddr))
	_, runnerAdmin, _ := s.service("vagrant-runner")
	checkRunnerRegistered(t, runnerAdmin)

	// State: a Vagrant user's noop job, run to its end by the containerised runner.
	v := vagrantpb.NewVagrantClient(s.gw)
	gen, err := v.GenerateLoginToken(vagrantCtx(callCtx(t), s.vagrantToken(t)), &emptypb.Empty{})
	if err != nil {
		t.Fatalf("GenerateLoginToken through the gateway: %v", err)
	}
	vToken := gen.GetToken()
	runJob := func(t *testing.T) string {
		t.Helper()
		id := s.queueJob(t, v, vToken, &vagrantpb.Job{Operation: &vagrantpb.Job_Noop_{Noop: &vagrantpb.Job_Noop{}}})
		if out, done := followJob(t, v, vToken, id); done.GetError() != nil {
			t.Fatalf("noop job %s ended with %v\noutput:\n%s", id, done.GetError(), out)
		}
		return id
	}
	jobID := runJob(t)

	// working calls every probe (and lvmd-agent over mutual TLS) with token until each works,
	// retrying any error up to the overall deadline; it answers how long that took.
	working := func(t *testing.T, token string) time.Duration {
		t.Helper()
		start := time.Now()
		calls := append([]probe{}, probes...)
		calls = append(calls, probe{"lvmd-agent GetFreeBytes over mutual TLS", "lvmd-agent", func(ctx context.Context, _ grpc.ClientConnInterface) error {
			_, err := lvmd.GetFreeBytes(ctx, &lvmdpb.GetFreeBytesRequest{DeviceClass: "dev"})
			return err
		}})
		for _, p := range calls {
			if err := eventually(time.Until(deadline), 200*time.Millisecond, func() error {
				return p.call(withToken(callCtx(t), token), s.gw)
			}); err != nil {
				t.Errorf("%s with the token after the restart: %v", p.name, err)
			}
		}
		return time.Since(start)
	}
	working(t, token)

	var figures []string
	for _, svc := range composeKilled {
		before := c.container(t, svc)
		killed := time.Now()
		c.crash(t, svc, before)
		var st containerState
		if err := eventually(time.Until(deadline), 100*time.Millisecond, func() error {
			st = c.container(t, svc)
			if st.id != before.id || st.restarts <= before.restarts || st.health != "healthy" {
				return fmt.Errorf("%+v (before the kill: %+v)", st, before)
			}
			return nil
		}); err != nil {
			t.Fatalf("%s is not back healthy after its crash: %v", svc, err)
		}
		healthy := time.Since(killed)
		calls := working(t, token) + healthy
		if svc == "vagrant-runner" || svc == "vagrant-server" || svc == "nats" || svc == "postgres" {
			checkRunnerRegistered(t, runnerAdmin)
		}
		figures = append(figures, fmt.Sprintf("%s: healthy %s, calls working %s", svc, healthy.Round(100*time.Millisecond), calls.Round(100*time.Millisecond)))
	}
	t.Logf("SIGKILL → restarted, healthy, every call through the gateway working again:\n  %s", strings.Join(figures, "\n  "))

	// An event in flight: NATS frozen (docker pause) while cnpgi-plugin archives a segment. The
	// archive is recorded with its event in one transaction (the outbox), so the event is
	// published once NATS answers again, not lost.
	walServer := "faults-" + randomHex(t, 4)
	nats := c.composeContainer(t, "nats")
	if out, err := dockerOut(c.ctx, c.env, "pause", nats); err != nil {
		t.Fatalf("docker pause nats: %v: %s", err, out)
	}
	paused := time.Now()
	walStart := paused.Add(-time.Second)
	walName, _ := archiveSegment(t, c, token, walServer)
	archived := time.Since(paused)
	if out, err := dockerOut(c.ctx, c.env, "unpause", nats); err != nil {
		t.Fatalf("docker unpause nats: %v: %s", err, out)
	}
	unpaused := time.Now()
	if ev := waitWALArchived(t, s.endpoints, walServer, walStart); !slices.Contains(ev.GetWalNames(), walName) {
		t.Errorf("the event archived while NATS was frozen: %v, want %s", ev, walName)
	}
	t.Logf("WAL archived with NATS frozen in %s; its event on the stream %s after NATS answered again",
		archived.Round(100*time.Millisecond), time.Since(unpaused).Round(100*time.Millisecond))

	// The job run before the kills is still there, and the restarted runner runs a new one.
	if j, err := v.GetJob(vagrantCtx(callCtx(t), vToken), &vagrantpb.GetJobRequest{JobId: jobID}); err != nil || j.GetState() != vagrantpb.Job_SUCCESS {
		t.Errorf("GetJob %s after the kills: %v, %v; want the job, SUCCESS", jobID, j.GetState(), err)
	}
	runJob(t)

	// Logout, then auth crashed and restarted: the token is still refused by every service.
	auth := authpb.NewAuthServiceClient(s.gw)
	if resp, err := auth.Logout(withToken(callCtx(t), token), &authpb.LogoutRequest{}); err != nil || !resp.GetSuccess() {
		t.Fatalf("Logout through the compose gateway: %v, %v", resp, err)
	}
	before := c.container(t, "auth")
	c.crash(t, "auth", before)
	if err := eventually(time.Until(deadline), 100*time.Millisecond, func() error {
		if st := c.container(t, "auth"); st.restarts <= before.restarts || st.health != "healthy" {
			return fmt.Errorf("%+v", st)
		}
		return nil
	}); err != nil {
		t.Fatalf("auth is not back healthy after its crash: %v", err)
	}
	for _, p := range probes {
		// A call must reach auth again (not fail for its absence) and be refused.
		if err := eventually(time.Minute, 200*time.Millisecond, func() error {
			if err := p.call(withToken(callCtx(t), token), s.gw); status.Code(err) != codes.Unauthenticated {
				return fmt.Errorf("answers %v", err)
			}
			return nil
		}); err != nil {
			t.Errorf("%s through the gateway, with a token logged out before auth restarted: %v", p.name, err)
		}
	}
	for _, name := range []string{"stats", "kaas"} {
		addr, _, _ := s.service(name)
		conn := dialPlain(t, addr)
		for _, p := range probes {
			if p.backend != name {
				continue
			}
			if err := p.call(withToken(callCtx(t), token), conn); status.Code(err) != codes.Unauthenticated {
				t.Errorf("%s at %s, with a token logged out before auth restarted: %v, want Unauthenticated", p.name, addr, err)
			}
		}
	}
	if ct, err := auth.CheckToken(callCtx(t), &authpb.CheckTokenRequest{Token: token}); err != nil || ct.GetSuccess() {
		t.Errorf("CheckToken of a token logged out before auth restarted: %v, %v; want success=false", ct, err)
	}

	// `docker compose down` keeping the volumes, then up again (with another
	// PLINTH_ADMIN_PASSWORD, which must not replace the admin's): same password, same job.
	downStart := time.Now()
	down := exec.CommandContext(c.ctx, "docker", "compose", "-p", c.project, "-f", filepath.Join(c.root, "docker-compose.yaml"),
		"-f", filepath.Join(c.root, ".plinth", "compose", c.project, "override.yaml"), "--profile", "go-gateway", "down")
	down.Dir = c.root
	down.Env = append(c.env, "PLINTH_COMPOSE_LVMD_VG="+composeVG(c.project))
	if out, err := down.CombinedOutput(); err != nil {
		t.Fatalf("docker compose down (volumes kept): %v\n%s", err, out)
	}
	if left, _ := dockerOut(c.ctx, c.env, "ps", "-aq", "--filter", "label=com.docker.compose.project="+c.project); left != "" {
		t.Errorf("containers left after docker compose down: %s", left)
	}
	downTook := time.Since(downStart)
	c.password = randomHex(t, 12)
	upStart := time.Now()
	if out, err := c.compose(c.up...); err != nil {
		t.Fatalf("plinth-compose up after down without -v: %v\n%s", err, out)
	}
	t.Logf("docker compose down (volumes kept) in %s, plinth-compose up again to healthy in %s", downTook.Round(100*time.Millisecond), time.Since(upStart).Round(100*time.Millisecond))
	if _, err := auth.Login(callCtx(t), &authpb.LoginRequest{Username: "admin", Password: c.password}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("Login with the second up's PLINTH_ADMIN_PASSWORD: %v, want Unauthenticated (the admin's password is the first one)", err)
	}
	token = s.login(t)
	if d := working(t, token); !t.Failed() {
		t.Logf("after down/up: logged in with the first password, every call working in %s", d.Round(100*time.Millisecond))
	}
	var listed []string
	if err := eventually(time.Minute, 200*time.Millisecond, func() error {
		l, err := v.XListJobs(vagrantCtx(callCtx(t), vToken), &vagrantpb.ListJobsRequest{})
		if err != nil {
			return err
		}
		listed = nil
		for _, j := range l.GetJobs() {
			listed = append(listed, j.GetId())
		}
		return nil
	}); err != nil {
		t.Errorf("ListJobs after down/up: %v", err)
	} else if !slices.Contains(listed, jobID) {
		t.Errorf("ListJobs after down/up: %v, want job %s among them", listed, jobID)
	}
	if last, err := lastWAL(t, c.s.gw, token, walServer); err != nil || last != walName {
		t.Errorf("WAL Status of %s after down/up: %q, %v; want the catalog's last segment %s", walServer, last, err, walName)
	}

	c.downAndGone(t)
}

// containerState is what TestComposeFaults watches of a service's container.
type containerState struct {
	id       string
	restarts int
	pid      int
	status   string
	health   string
}

// crash kills the main process of service's container (st) from the host, as a crash would.
func (c *composeStack) crash(t *testing.T, service string, st containerState) {
	t.Helper()
	if st.status != "running" || st.pid <= 0 {
		t.Fatalf("%s is not running: %+v", service, st)
	}
	if err := syscall.Kill(st.pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -KILL %d (%s's main process): %v", st.pid, service, err)
	}
}

// container answers the state of the project's container of service.
func (c *composeStack) container(t *testing.T, service string) containerState {
	t.Helper()
	id, err := dockerOut(c.ctx, c.env, "ps", "-aq", "--filter", "label=com.docker.compose.project="+c.project,
		"--filter", "label=com.docker.compose.service="+service)
	if err != nil || id == "" || strings.Contains(id, "\n") {
		t.Fatalf("the container of %s: %q, %v", service, id, err)
	}
	out, err := dockerOut(c.ctx, c.env, "inspect", "-f", "{{.RestartCount}} {{.State.Pid}} {{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}", id)
	f := strings.Fields(out)
	if err != nil || len(f) != 4 {
		t.Fatalf("docker inspect %s: %q, %v", service, out, err)
	}
	n, err1 := strconv.Atoi(f[0])
	pid, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		t.Fatalf("docker inspect %s: %q", service, out)
	}
	return containerState{id: id, restarts: n, pid: pid, status: f[2], health: f[3]}
}
