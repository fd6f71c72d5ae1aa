package app_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	koorstats "github.com/plinth-dev/plinth/libs/api/api/services/stats/v1"
	vagrantpb "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/ports"
	"github.com/plinth-dev/plinth/libs/platform/service/servicetest"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/gateway/internal/app"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const adminPassword = "admin-secret-pw"

// suite is one real auth (the binary, on its own schema and the test NATS), in-process
// backends that record what reached them, and gateways in front of them.
type suite struct {
	natsURL string
	db      testenv.Database
	// authAddr is auth's gateway listener, a unix socket, as make up wires them.
	authAddr string
	stats    *recorder
	lvmd     *recorder
	vagrant  *recorder
	lvmdSock string
	statsAdr string
	vagAddr  string
	logs     *testenv.SyncBuffer
}

func newSuite(t *testing.T, authEnv ...string) *suite {
	t.Helper()
	s := &suite{natsURL: testenv.NATS(t), logs: &testenv.SyncBuffer{}}
	s.db = testenv.DB(t)
	s.authAddr = startAuth(t, s.db.URL, s.natsURL, authEnv...)

	s.stats, s.lvmd, s.vagrant = newRecorder(), newRecorder(), newRecorder()
	gs := s.stats.server(t)
	statspb.RegisterStatsServiceServer(gs, statsBackend{})
	koorstats.RegisterStatsServiceServer(gs, statsV1Backend{})
	s.statsAdr = serve(t, gs, "tcp", "127.0.0.1:0")

	gl := s.lvmd.server(t)
	lvmdpb.RegisterVGServiceServer(gl, &vgBackend{})
	s.lvmdSock = filepath.Join(shortTempDir(t), "lvmd.sock")
	serve(t, gl, "unix", s.lvmdSock)

	gv := s.vagrant.server(t)
	vagrantpb.RegisterVagrantServer(gv, vagrantpb.UnimplementedVagrantServer{})
	s.vagAddr = serve(t, gv, "tcp", "127.0.0.1:0")
	return s
}

// environ is the gateway's environment for this suite, plus extra settings.
func (s *suite) environ(extra ...string) []string {
	return append([]string{
		"PLINTH_GRPC_ADDR=127.0.0.1:0", "PLINTH_ADMIN_ADDR=127.0.0.1:0", "PLINTH_NATS_URL=" + s.natsURL,
		"PLINTH_AUTH_ADDR=" + s.authAddr, "PLINTH_GATEWAY_BACKEND_STATS=" + s.statsAdr,
		"PLINTH_GATEWAY_BACKEND_VAGRANT_SERVER=" + s.vagAddr,
		"PLINTH_GATEWAY_BACKEND_LVMD_AGENT=unix://" + s.lvmdSock,
		"PLINTH_GATEWAY_TOKEN_CACHE_TTL=30s", "PLINTH_LOG_FORMAT=json", "PLINTH_LOG_LEVEL=debug",
	}, extra...)
}

// gateway is one running gateway of a test.
type gateway struct {
	addr, admin string
	// koor is the Koor UI's port, "" when it is off.
	koor    string
	conn    *grpc.ClientConn
	running *servicetest.Running
}

func (s *suite) gateway(t *testing.T, o app.Options, extra ...string) *gateway {
	t.Helper()
	cfg := app.Defaults()
	if err := config.Load(&cfg, nil, s.environ(extra...)); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	log, err := telemetry.NewLogger(s.logs, "json", "debug")
	if err != nil {
		t.Fatal(err)
	}
	g, err := app.Open(context.Background(), cfg, log.With("instance", t.Name()), o)
	if err != nil {
		t.Fatal(err)
	}
	r := servicetest.Run(t, g.Service)
	return &gateway{addr: g.Addr(), admin: r.Service.AdminAddr(), koor: g.KoorAddr(), conn: dial(t, g.Addr()), running: r}
}

// startAuth builds and runs the real auth binary until the test ends, and returns the address
// of its gateway listener: a unix socket, whose x-forwarded-for auth believes (make up's
// wiring).
func startAuth(t *testing.T, dbURL, natsURL string, extraEnv ...string) string {
	t.Helper()
	bin := buildAuth(t)
	p, err := ports.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", p[0])
	gateway := "unix://" + filepath.Join(shortTempDir(t), "auth-gateway.sock")
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PLINTH_DATABASE_URL="+dbURL, "PLINTH_NATS_URL="+natsURL,
		"PLINTH_GRPC_ADDR="+addr, "PLINTH_AUTH_GATEWAY_ADDR="+gateway, "PLINTH_ADMIN_ADDR=off", "PLINTH_LOG_FORMAT=json",
		"PLINTH_ADMIN_PASSWORD="+adminPassword, "PLINTH_AUTH_ARGON2_MEMORY_KIB=8192", "PLINTH_AUTH_ARGON2_ITERATIONS=1")
	cmd.Env = append(cmd.Env, extraEnv...)
	var out testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	conn := dial(t, gateway)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return gateway
		}
		select {
		case <-done:
			t.Fatalf("auth exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("auth not serving after 60s: %v\n%s", err, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// buildAuth builds services/auth/cmd/auth once per test binary.
func buildAuth(t *testing.T) string {
	t.Helper()
	return testenv.Binary(t, "github.com/plinth-dev/plinth/services/auth/cmd/auth")
}

func serve(t testing.TB, gs *grpc.Server, network, address string) string {
	t.Helper()
	lis, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

// shortTempDir is a temp dir short enough for a unix socket path (107 bytes).
func shortTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "gw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func bearer(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

func login(t *testing.T, conn grpc.ClientConnInterface) string {
	t.Helper()
	resp, err := authpb.NewAuthServiceClient(conn).Login(ctxT(t), &authpb.LoginRequest{Username: "admin", Password: adminPassword})
	if err != nil {
		t.Fatalf("login through the gateway: %v", err)
	}
	if !strings.HasPrefix(resp.GetToken(), "plt_") {
		t.Fatalf("token %q", resp.GetToken()[:4])
	}
	return resp.GetToken()
}
