package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/platform/service/servicetest"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
	"github.com/plinth-dev/plinth/libs/platform/testenv"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/app"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm/lvmtest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// env is one test's volume groups, database schema and NATS, shared by the agents it starts.
type env struct {
	dbURL, natsURL string
	vgs            []*lvmtest.VG
	dir            string // holds lvmd.yaml and the socket (short: unix paths are limited)
	node           string
	logs           *testenv.SyncBuffer
	secrets        []string // strings no log line may contain
}

// envOptions shape an env: how many volume groups (classes "ssd", "hdd", ...), their size.
type envOptions struct {
	classes int
	size    int64
	spareGB int
}

var classNames = []string{"ssd", "hdd", "nvme"}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	if o.classes == 0 {
		o.classes = 1
	}
	e := &env{dbURL: testenv.DB(t).URL, natsURL: testenv.NATS(t), logs: &testenv.SyncBuffer{}, node: testenv.UniqueName(t, "node")}
	for range o.classes {
		e.vgs = append(e.vgs, lvmtest.New(t, lvmtest.Options{Size: o.size}))
	}
	dir, err := os.MkdirTemp("", "lvmd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	e.dir = dir
	var y strings.Builder
	y.WriteString("socket-name: " + filepath.Join(dir, "lvmd.sock") + "\ndevice-classes:\n")
	for i, vg := range e.vgs {
		fmt.Fprintf(&y, "  - name: %s\n    volume-group: %s\n    default: %v\n    spare-gb: %d\n", classNames[i], vg.Name, i == 0, o.spareGB)
	}
	if err := os.WriteFile(filepath.Join(dir, "lvmd.yaml"), []byte(y.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// Runs after every agent stopped: no log line may hold a secret.
	t.Cleanup(func() {
		logs := e.logs.String()
		for _, s := range e.secrets {
			if strings.Contains(logs, s) {
				t.Errorf("a secret reached the log: %q", s)
			}
		}
	})
	return e
}

// config is the agent's configuration for this env, as main builds it.
func (e *env) config(t testing.TB, mutate ...func(*app.Config)) app.Config {
	t.Helper()
	cfg := app.Defaults()
	environ := []string{
		"PLINTH_DATABASE_URL=" + e.dbURL, "PLINTH_NATS_URL=" + e.natsURL, "PLINTH_ADMIN_ADDR=127.0.0.1:0",
		"PLINTH_LOG_FORMAT=json", "PLINTH_LOG_LEVEL=debug", "PLINTH_LVMD_CONFIG=" + filepath.Join(e.dir, "lvmd.yaml"),
		"PLINTH_LVMD_NODE_NAME=" + e.node, "PLINTH_LVMD_NODE_ADDRESSES=192.0.2.10",
		"PLINTH_LVMD_POLL_INTERVAL=1s", "PLINTH_LVMD_PART_SIZE_MIB=5",
	}
	if err := config.Load(&cfg, nil, environ); err != nil {
		t.Fatal(err)
	}
	for _, m := range mutate {
		m(&cfg)
	}
	if err := cfg.Resolve(); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// agent is one running agent.
type agent struct {
	svc  *service.Service
	conn *grpc.ClientConn
	lv   lvmdpb.LVServiceClient
	vg   lvmdpb.VGServiceClient
	stop func()
}

// start runs an agent until the test ends (or stop) and dials its socket.
func (e *env) start(t testing.TB, cfg app.Config) *agent {
	t.Helper()
	log, err := telemetry.NewLogger(e.logs, "json", "debug")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := app.Open(context.Background(), cfg, log.With("test", t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	r := servicetest.Run(t, svc)
	return &agent{svc: svc, conn: r.Conn, lv: lvmdpb.NewLVServiceClient(r.Conn), vg: lvmdpb.NewVGServiceClient(r.Conn), stop: r.Stop}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// wantCode fails t unless err has code and (when given) its message contains each part.
func wantCode(t testing.TB, err error, code codes.Code, parts ...string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("got %v %q, want %v", st.Code(), st.Message(), code)
	}
	for _, p := range parts {
		if !strings.Contains(st.Message(), p) {
			t.Fatalf("message %q does not contain %q", st.Message(), p)
		}
	}
}

// pool opens the test's database (the agent's schema) for assertions.
func (e *env) pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// outboxEvents returns the outbox's events on subject (all when empty), oldest first, decoded
// into new(T) values by the caller's factory.
func outboxEvents[T proto.Message](t testing.TB, p *pgxpool.Pool, subject string, newT func() T) []T {
	t.Helper()
	rows, err := p.Query(context.Background(), `SELECT payload FROM outbox WHERE subject = $1 ORDER BY id`, subject)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var payload []byte
		if err := rows.Scan(&payload); err != nil {
			t.Fatal(err)
		}
		m := newT()
		if err := proto.Unmarshal(payload, m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// eventually polls cond every 100ms until it holds or the context ends.
func eventually(t testing.TB, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
