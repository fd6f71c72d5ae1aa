package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
)

// target is one RPC ghz calls for the whole run, window by window.
type target struct {
	name, addr, call, data string
	md                     map[string]string
}

// runLoad drives the suite until ctx ends: ghz against one read RPC of each service (through
// the gateway when it runs), and the services' own flows — vagrant jobs through a runner,
// lvmd volumes created and removed.
func runLoad(ctx context.Context, s *suite, o options, rec *recorder) {
	token, err := login(ctx, s)
	if err != nil {
		rec.flow("login", err)
		return
	}
	var wg sync.WaitGroup
	for _, t := range targets(s, token) {
		wg.Go(func() { ghzWindows(ctx, o, t, rec) })
	}
	if e, ok := s.service("vagrant-server"); ok {
		wg.Go(func() { vagrantJobs(ctx, s, e.GRPC, rec) })
	}
	if e, ok := s.service("lvmd-agent"); ok {
		wg.Go(func() { lvmdVolumes(ctx, e.GRPC, rec) })
	}
	wg.Wait()
}

// targets are the RPCs under load, each through the gateway when the suite has one.
func targets(s *suite, token string) []target {
	bearer := map[string]string{"authorization": "Bearer " + token}
	via := func(service string) (string, bool) {
		if g, ok := s.service("gateway"); ok {
			return g.GRPC, true
		}
		e, ok := s.service(service)
		return e.GRPC, ok && e.GRPC != ""
	}
	var out []target
	add := func(service, name, call, data string, md map[string]string) {
		if addr, ok := via(service); ok {
			if _, running := s.service(service); running {
				out = append(out, target{name: name, addr: addr, call: call, data: data, md: md})
			}
		}
	}
	add("auth", "auth CheckToken", "services.auth.AuthService/CheckToken", `{"token":"`+token+`"}`, nil)
	add("stats", "stats GetClusterRadar", "stats.StatsService/GetClusterRadar", `{}`, bearer)
	add("kaas", "kaas GetClusterList", "cnct.kaas.api.Cluster/GetClusterList", `{}`, bearer)
	add("vagrant-server", "vagrant GetVersionInfo", "hashicorp.vagrant.Vagrant/GetVersionInfo", `{}`,
		map[string]string{"client-api-protocol": "1,1"})
	return out
}

// ghzWindows runs ghz against t window after window until ctx ends, one sample each.
func ghzWindows(ctx context.Context, o options, t target, rec *recorder) {
	md, _ := json.Marshal(t.md)
	for ctx.Err() == nil {
		window := min(o.window, time.Until(deadline(ctx)))
		if window < time.Second {
			return
		}
		// A count rather than a duration: ghz cuts calls still in flight when a duration ends,
		// and they would show as client-side Canceled/Unavailable that no server caused.
		total := int(window.Seconds()) * o.rps
		args := []string{"--insecure", "--format", "json", "-n", strconv.Itoa(total), "--rps", strconv.Itoa(o.rps),
			"-c", "8", "--connections", "2", "--call", t.call, "-d", t.data, "-m", string(md), t.addr}
		out, err := exec.CommandContext(ctx, o.ghz, args...).Output()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			rec.flow("ghz "+t.name, fmt.Errorf("ghz: %w", err))
			continue
		}
		rec.latency(parseGHZ(t.name, out))
	}
}

// parseGHZ turns ghz's JSON report into a sample.
func parseGHZ(name string, out []byte) latencySample {
	var r struct {
		Count  int     `json:"count"`
		RPS    float64 `json:"rps"`
		LatDis []struct {
			Percentage int   `json:"percentage"`
			Latency    int64 `json:"latency"`
		} `json:"latencyDistribution"`
		Codes  map[string]int `json:"statusCodeDistribution"`
		Errors map[string]int `json:"errorDistribution"`
	}
	s := latencySample{at: time.Now(), target: name, problems: map[string]int{}}
	if err := json.Unmarshal(out, &r); err != nil {
		s.errors, s.problems["unreadable ghz report"] = 1, 1
		return s
	}
	s.calls, s.rps = r.Count, r.RPS
	for _, d := range r.LatDis {
		if d.Percentage == 99 {
			s.p99 = time.Duration(d.Latency)
		}
	}
	for code, n := range r.Codes {
		if code != "OK" {
			s.errors += n
		}
	}
	for msg, n := range r.Errors {
		s.problems[msg] += n
	}
	return s
}

func deadline(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(time.Hour)
	}
	return d
}

// login signs in as the suite's first user.
func login(ctx context.Context, s *suite) (string, error) {
	e, ok := s.service("auth")
	if !ok {
		return "", fmt.Errorf("auth is not running")
	}
	conn, err := grpc.NewClient(e.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	resp, err := authpb.NewAuthServiceClient(conn).Login(ctx, &authpb.LoginRequest{Username: "admin", Password: adminPassword})
	if err != nil {
		return "", fmt.Errorf("login: %w", err)
	}
	return resp.GetToken(), nil
}

// vagrantJobs queues a noop job every half second and waits for a runner to finish it.
func vagrantJobs(ctx context.Context, s *suite, addr string, rec *recorder) {
	tok, err := os.ReadFile(filepath.Join(s.home, "vagrant-runner", "token"))
	if err != nil {
		rec.flow("vagrant job", fmt.Errorf("the runner's token: %w", err))
		return
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		rec.flow("vagrant job", err)
		return
	}
	defer conn.Close()
	client := vagrant.NewVagrantClient(conn)
	call := metadata.AppendToOutgoingContext(ctx, "client-api-protocol", "1,1", "authorization", strings.TrimSpace(string(tok)))
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rec.flow("vagrant job", runJob(call, client))
	}
}

func runJob(ctx context.Context, c vagrant.VagrantClient) error {
	q, err := c.QueueJob(ctx, &vagrant.QueueJobRequest{Job: &vagrant.Job{
		TargetRunner: &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Any{Any: &vagrant.Ref_RunnerAny{}}},
		Operation:    &vagrant.Job_Noop_{Noop: &vagrant.Job_Noop{}},
	}})
	if err != nil {
		return fmt.Errorf("QueueJob: %w", err)
	}
	for i := 0; i < 300; i++ {
		j, err := c.GetJob(ctx, &vagrant.GetJobRequest{JobId: q.GetJobId()})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("GetJob: %w", err)
		}
		switch j.GetState() {
		case vagrant.Job_SUCCESS:
			return nil
		case vagrant.Job_ERROR:
			return fmt.Errorf("job %s failed: %s", q.GetJobId(), j.GetError().GetMessage())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("job %s not done after 15 s", q.GetJobId())
}

// lvmdVolumes creates and removes a 1 GiB volume every two seconds.
func lvmdVolumes(ctx context.Context, addr string, rec *recorder) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		rec.flow("lvmd volume", err)
		return
	}
	defer conn.Close()
	lv := lvmdpb.NewLVServiceClient(conn)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		name := fmt.Sprintf("soak-%d-%d", os.Getpid(), i)
		_, err := lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: name, SizeGb: 1})
		if err == nil {
			_, err = lv.RemoveLV(ctx, &lvmdpb.RemoveLVRequest{Name: name})
		}
		if ctx.Err() != nil {
			return
		}
		rec.flow("lvmd volume", err)
	}
}
