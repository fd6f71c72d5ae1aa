package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
)

// connectNATS connects to the suite's NATS as the operator user the launcher reported; the
// connection is closed when the test ends.
func connectNATS(t *testing.T, e endpoints) *nats.Conn {
	t.Helper()
	opts := []nats.Option{nats.Timeout(5 * time.Second)}
	if e.NATSUser != "" {
		pw, err := os.ReadFile(e.NATSPasswordFile)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, nats.UserInfo(e.NATSUser, strings.TrimSpace(string(pw))))
	}
	nc, err := nats.Connect(e.NATS, opts...)
	if err != nil {
		t.Fatalf("connect to NATS at %s: %v", e.NATS, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// checkNATS checks that the embedded NATS refuses a client without credentials, then
// connects and asks JetStream for the account: it fails when JetStream is off.
func checkNATS(t *testing.T, e endpoints) {
	t.Helper()
	natsURL := e.NATS
	if e.NATSUser == "" {
		t.Errorf("the launcher reported no NATS user: its embedded NATS takes any client")
	}
	if anon, err := nats.Connect(natsURL, nats.Timeout(5*time.Second)); err == nil {
		anon.Close()
		t.Errorf("NATS at %s accepted a client without credentials", natsURL)
	}
	nc := connectNATS(t, e)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Fatalf("JetStream account info at %s: %v", natsURL, err)
	}
}

// connectDB opens the database the launcher reported and checks it is the one asked for.
func connectDB(t *testing.T, dbURL, wantName string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect to Postgres at %s: %v", dbURL, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	var name string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	if name != wantName {
		t.Fatalf("launcher's database is %q, want %q", name, wantName)
	}
	return conn
}

// dropDatabase removes a database the test made on a shared server. A private cluster is gone
// with the test's home, so failing to connect is not an error.
func dropDatabase(t *testing.T, dbURL, name string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/postgres"
	// A drop waits for a checkpoint: on a loaded 2-core CI machine it took more than 10 s.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Logf("not dropping %s: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("drop test database %s: %v", name, err)
	}
}

// checkAdmin requires 200 from the admin /healthz.
func checkAdmin(t *testing.T, name, addr string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Errorf("%s admin /healthz: %v", name, err)
		return
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("%s admin /healthz: %s", name, resp.Status)
	}
}

// checkGRPC requires grpc.health.v1 SERVING and a reflection listing with the service's own
// API beside the standard ones.
func checkGRPC(t *testing.T, name, target string) {
	t.Helper()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Errorf("%s: dial %s: %v", name, target, err)
		return
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Errorf("%s: health check at %s: %v", name, target, err)
		return
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("%s: health %s, want SERVING", name, resp.GetStatus())
	}
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Errorf("%s: reflection: %v", name, err)
		return
	}
	req := &reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{ListServices: ""},
	}
	if err := stream.Send(req); err != nil {
		t.Errorf("%s: reflection send: %v", name, err)
		return
	}
	reply, err := stream.Recv()
	if err != nil {
		t.Errorf("%s: reflection list: %v", name, err)
		return
	}
	var own, health bool
	for _, s := range reply.GetListServicesResponse().GetService() {
		switch {
		case s.GetName() == "grpc.health.v1.Health":
			health = true
		case !strings.HasPrefix(s.GetName(), "grpc."):
			own = true
		}
	}
	if !health || !own {
		t.Errorf("%s: reflection lists %v; want grpc.health.v1.Health and the service's own API",
			name, reply.GetListServicesResponse().GetService())
	}
}

// checkRunnerRegistered waits until the suite's vagrant-runner reports that it registered with
// vagrant-server: the launcher bootstraps a login token for it on a fresh database.
func checkRunnerRegistered(t *testing.T, admin string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	var body string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := client.Get("http://" + admin + "/readyz")
		if err != nil {
			body = err.Error()
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if body = string(b); strings.Contains(body, "registered with vagrant-server") {
			return
		}
	}
	t.Errorf("vagrant-runner never registered: %s", body)
}
