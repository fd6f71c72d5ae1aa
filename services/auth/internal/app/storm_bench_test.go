package app_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/latency"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// BenchmarkLoginStorm: 100 clients send wrong logins as fast as auth answers them, at the
// production argon2id parameters and with the throttles out of the way (every guess is hashed:
// the worst case), while one user logs in with the right password from another address; each
// iteration is one such login, retried every 20 ms while it is refused as busy. Bounds: auth's
// resident memory stays under twice its idle figure and the right login's p99 under 1 s.
// OneAddress is one attacker (one address holds at most GOMAXPROCS places of the hash gate);
// ManyAddresses spreads the storm over 100 addresses, which fill every place but the ones kept
// for addresses with a recent successful login (the user's, from its warm-up logins).
// Auth runs as its own process (the binary, built here), so its RSS is auth's alone.
func BenchmarkLoginStorm(b *testing.B) {
	b.Run("OneAddress", func(b *testing.B) { benchStorm(b, func(int) string { return "203.0.113.7" }) })
	b.Run("ManyAddresses", func(b *testing.B) {
		benchStorm(b, func(i int) string { return "203.0.113." + strconv.Itoa(1+i) })
	})
}

// benchStorm runs the storm with attacker(i) the address of client i.
func benchStorm(b *testing.B, attacker func(i int) string) {
	const clients = 100
	auth := startAuthProcess(b,
		"PLINTH_AUTH_ARGON2_MEMORY_KIB=19456", "PLINTH_AUTH_ARGON2_ITERATIONS=2",
		"PLINTH_AUTH_LOCK_PAIR_AFTER=1000000000", "PLINTH_AUTH_LOCK_ADDR_AFTER=1000000000",
		// The measured logins are all admin's: its token quota must not end the run.
		"PLINTH_AUTH_MAX_TOKENS_PER_USER=0")
	// As the gateway: only its listener's x-forwarded-for names a client's address.
	c := authpb.NewAuthServiceClient(dial(b, auth.gateway))
	from := func(ctx context.Context, addr string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "x-forwarded-for", addr)
	}
	right := &authpb.LoginRequest{Username: "admin", Password: "admin-secret-pw"}
	ready := time.Now()
	for { // the first login also waits for auth to listen
		_, err := c.Login(from(b.Context(), "198.51.100.9"), right)
		if err == nil {
			break
		}
		if time.Since(ready) > time.Minute {
			b.Fatalf("auth did not answer a login within a minute: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for range 3 { // warm up: the hash gate, the pools, the heap at work
		if _, err := c.Login(from(b.Context(), "198.51.100.9"), right); err != nil {
			b.Fatal(err)
		}
	}
	idle := auth.rssMB(b)

	ctx, stop := context.WithCancel(b.Context())
	var storm sync.WaitGroup
	var wrong, busy atomic.Int64
	for i := range clients {
		storm.Go(func() {
			req := &authpb.LoginRequest{Username: "admin", Password: "wrong-password"}
			for ctx.Err() == nil {
				_, err := c.Login(from(ctx, attacker(i)), req)
				switch status.Code(err) {
				case codes.Unauthenticated:
					wrong.Add(1)
				case codes.ResourceExhausted:
					busy.Add(1)
				}
			}
		})
	}
	peak := idle
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for ctx.Err() == nil {
			peak = max(peak, auth.rssMB(b))
			time.Sleep(10 * time.Millisecond)
		}
	})
	time.Sleep(200 * time.Millisecond) // the storm under way

	var all latencies
	var mine []time.Duration
	var retries int
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		for {
			_, err := c.Login(from(b.Context(), "198.51.100.9"), right)
			if err == nil {
				break
			}
			if status.Code(err) != codes.ResourceExhausted {
				b.Fatal(err)
			}
			retries++
			time.Sleep(20 * time.Millisecond)
		}
		mine = append(mine, time.Since(start))
	}
	b.StopTimer()
	stop()
	storm.Wait()
	sampler.Wait()
	all.add(mine)
	all.report(b)
	p99 := latency.Percentile(all.d, 0.99)
	b.ReportMetric(idle, "idle-MB")
	b.ReportMetric(peak, "peak-MB")
	b.ReportMetric(float64(retries)/float64(len(mine)), "busy-retries/op")
	b.ReportMetric(float64(busy.Load())/float64(max(1, wrong.Load()+busy.Load())), "storm-refused-share")
	b.Logf("storm: %d wrong logins hashed, %d refused as busy; right login p99 %v; RSS idle %.0f MB, peak %.0f MB",
		wrong.Load(), busy.Load(), p99, idle, peak)
	if peak > 2*idle {
		b.Errorf("RSS went from %.0f MB idle to %.0f MB under the storm: over twice idle", idle, peak)
	}
	if p99 > time.Second {
		b.Errorf("the right login's p99 under the storm is %v, over 1 s", p99)
	}
}

// authProcess is the auth binary running for a benchmark.
type authProcess struct {
	// addr is the gRPC port; gateway the gateway listener (a unix socket).
	addr, gateway string
	pid           int
}

// startAuthProcess builds services/auth/cmd/auth and runs it until the benchmark ends, on a
// fresh database and the test NATS, with the test's admin password and extra environ.
func startAuthProcess(b *testing.B, extra ...string) authProcess {
	b.Helper()
	bin := testenv.Binary(b, "../../cmd/auth")
	addr, gateway := freeAddr(b), "unix://"+filepath.Join(shortTempDir(b), "gw.sock")
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PLINTH_DATABASE_URL="+testenv.DB(b).URL, "PLINTH_NATS_URL="+testenv.NATS(b),
		"PLINTH_GRPC_ADDR="+addr, "PLINTH_ADMIN_ADDR="+freeAddr(b), "PLINTH_LOG_LEVEL=warn",
		"PLINTH_ADMIN_PASSWORD=admin-secret-pw", "PLINTH_AUTH_GATEWAY_ADDR="+gateway)
	cmd.Env = append(cmd.Env, extra...)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return authProcess{addr: addr, gateway: gateway, pid: cmd.Process.Pid}
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// rssMB is the process's resident memory in MB (/proc/<pid>/status VmRSS).
func (p authProcess) rssMB(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}
