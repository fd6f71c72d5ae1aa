package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"

	statspb "github.com/plinth-dev/plinth/libs/api/stats"
)

// recordedDashboard serves a health report captured from the test cluster (Ceph 16.2.15 with a
// gateway, an RBD pool and 20 MB of objects) through the dashboard's API, so a benchmark reads a
// full-size, real report without starting Ceph. Benchmarks only: the tests read a live cluster.
func recordedDashboard(b *testing.B) string {
	b.Helper()
	report, err := os.ReadFile("../ceph/testdata/health-full-rgw-rbd.json")
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/auth":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"token": "dashboard-token"}`))
		case "/api/health/full":
			_, _ = w.Write(report)
		case "/api/rgw/daemon":
			_, _ = w.Write([]byte(`[{"server_hostname": "vm", "zone_name": "default"}]`))
		default:
			http.NotFound(w, r)
		}
	}))
	b.Cleanup(srv.Close)
	return "http://bench:pw@" + srv.Listener.Addr().String()
}

// benchTargets starts stats (token check on, answers from the recorded report) and a raw
// grpc-go server with no interceptors whose handlers return stats's answers as constants.
func benchTargets(b *testing.B) (stats, raw string, client statspb.StatsServiceClient) {
	b.Helper()
	e := newEnv(b)
	in := e.start(b, e.config(b, "PLINTH_STATS_CEPH_URL="+recordedDashboard(b), "PLINTH_STATS_INVENTORY=false", "PLINTH_LOG_LEVEL=info"))
	var st *statspb.GetClusterStatsResponse
	eventually(b, 30*time.Second, "the first report", func() (bool, string) {
		var err error
		st, err = in.client.GetClusterStats(authed(b), &statspb.GetClusterStatsRequest{})
		return err == nil, fmt.Sprint(err)
	})
	radar, err := in.client.GetClusterRadar(authed(b), &statspb.GetClusterRadarRequest{})
	if err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer()
	statspb.RegisterStatsServiceServer(srv, constant{stats: st, radar: radar})
	reflection.Register(srv) // ghz reads the schema by reflection, as from stats
	go func() { _ = srv.Serve(l) }()
	b.Cleanup(srv.Stop)
	return in.conn.Target(), l.Addr().String(), in.client
}

// constant answers with fixed messages: the floor a gRPC server on this machine can reach.
type constant struct {
	statspb.UnimplementedStatsServiceServer
	stats *statspb.GetClusterStatsResponse
	radar *statspb.GetClusterRadarResponse
}

func (c constant) GetClusterStats(context.Context, *statspb.GetClusterStatsRequest) (*statspb.GetClusterStatsResponse, error) {
	return c.stats, nil
}

func (c constant) GetClusterRadar(context.Context, *statspb.GetClusterRadarRequest) (*statspb.GetClusterRadarResponse, error) {
	return c.radar, nil
}

// BenchmarkGetClusterStats and BenchmarkGetClusterRadar: in-process gRPC clients in parallel
// against stats with the token check on.
func BenchmarkGetClusterStats(b *testing.B) {
	_, _, c := benchTargets(b)
	ctx := bearer(context.Background(), validToken)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.GetClusterStats(ctx, &statspb.GetClusterStatsRequest{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkGetClusterRadar(b *testing.B) {
	_, _, c := benchTargets(b)
	ctx := bearer(context.Background(), validToken)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.GetClusterRadar(ctx, &statspb.GetClusterRadarRequest{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// ghzReport is the part of ghz's JSON output the benchmark prints.
type ghzReport struct {
	Count   int64   `json:"count"`
	RPS     float64 `json:"rps"`
	Average int64   `json:"average"`
	Latency []struct {
		Percentage int   `json:"percentage"`
		Latency    int64 `json:"latency"`
	} `json:"latencyDistribution"`
	Status map[string]int64 `json:"statusCodeDistribution"`
}

func (r ghzReport) percentile(p int) time.Duration {
	for _, l := range r.Latency {
		if l.Percentage == p {
			return time.Duration(l.Latency)
		}
	}
	return 0
}

// BenchmarkGHZ drives both servers with ghz (an outside client): GetClusterStats and
// GetClusterRadar at GHZ_CONCURRENCY (50) for GHZ_REQUESTS (20000) each, and prints throughput,
// p50/p99 and stats's share of the raw server's throughput. bench/stats.sh builds ghz.
func BenchmarkGHZ(b *testing.B) {
	ghz, err := exec.LookPath("ghz")
	if err != nil {
		b.Skip("ghz is not on PATH: bench/stats.sh builds it from tools/ghz")
	}
	concurrency, requests := envInt("GHZ_CONCURRENCY", 50), envInt("GHZ_REQUESTS", 20000)
	stats, raw, _ := benchTargets(b)
	for range b.N {
		fmt.Printf("\n%-18s %-8s %10s %10s %10s %8s\n", "method", "server", "calls/s", "p50", "p99", "errors")
		for _, method := range []string{"GetClusterStats", "GetClusterRadar"} {
			var rps [2]float64
			for i, target := range []struct{ name, addr string }{{"stats", stats}, {"raw", raw}} {
				args := []string{"--insecure", "--call", "stats.StatsService/" + method, "-d", "{}", "--format", "json",
					"-c", strconv.Itoa(concurrency), "-n", strconv.Itoa(requests), target.addr}
				if target.name == "stats" {
					args = append(args, "--metadata", `{"authorization": "Bearer `+validToken+`"}`)
				}
				var out bytes.Buffer
				cmd := exec.Command(ghz, args...)
				cmd.Stdout, cmd.Stderr = &out, os.Stderr
				if err := cmd.Run(); err != nil {
					b.Fatalf("ghz %v: %v", args, err)
				}
				var r ghzReport
				if err := json.Unmarshal(out.Bytes(), &r); err != nil {
					b.Fatalf("ghz output: %v", err)
				}
				rps[i] = r.RPS
				fmt.Printf("%-18s %-8s %10.0f %10v %10v %8d\n", method, target.name, r.RPS,
					r.percentile(50).Round(time.Microsecond), r.percentile(99).Round(time.Microsecond), r.Count-r.Status["OK"])
				b.ReportMetric(r.RPS, method+"_"+target.name+"_calls/s")
				b.ReportMetric(float64(r.percentile(99).Microseconds()), method+"_"+target.name+"_p99_µs")
			}
			fmt.Printf("%-18s stats reaches %.0f%% of the raw server's throughput\n", method, 100*rps[0]/rps[1])
		}
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
