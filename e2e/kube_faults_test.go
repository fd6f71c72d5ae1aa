package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	vagrantpb "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
)

// checkFaultsLoseNothing deletes the pods of each of the suite's workloads in turn, then kills
// the kubelet once, and checks that nothing was lost on the way: work is handed to each
// workload (or to the one whose events it consumes) just before its pods go —
//   - stats: a volume made on lvmd-agent while stats' pods go; its event is consumed by the
//     new pod (stats counts the volume);
//   - vagrant-server and vagrant-runner: jobs queued just before their pods go all end in
//     SUCCESS, run by the runner that is there afterwards;
//   - cnpgi-plugin: a WAL segment archived just before its pod goes; its WALArchived event
//     reaches NATS;
//   - lvmd-agent: the volume removed just before its pod goes; stats sees it gone;
//
// and afterwards every pod is Ready and the token still opens every service.
func (k *kubeStack) checkFaultsLoseNothing(t *testing.T, token string, probes []probe) {
	s := k.s
	volumes0, avail0, err := s.statsUsage(t, token)
	if err != nil {
		t.Fatalf("stats GetClusterStats through the gateway: %v", err)
	}
	waitUsage := func(what string, wantVolumes int32, wantAvail int64) {
		t.Helper()
		if err := s.waitStatsUsage(t, token, time.Minute, wantVolumes, wantAvail); err != nil {
			t.Errorf("stats after %s: %v; want volumes %d, available %d", what, err, wantVolumes, wantAvail)
		}
	}
	volume := "kube-faults-" + randomHex(t, 3)
	vagrant := vagrantpb.NewVagrantClient(s.gw)
	vagrantToken := s.vagrantToken(t)
	var jobs []string
	queue := func(n int) {
		for range n {
			jobs = append(jobs, s.queueJob(t, vagrant, vagrantToken, &vagrantpb.Job{Operation: &vagrantpb.Job_Noop_{Noop: &vagrantpb.Job_Noop{}}}))
		}
	}
	walServer := "kube-faults-" + randomHex(t, 4)
	var walName string
	walStart := time.Now().Add(-time.Second)

	type fault struct {
		workload      string
		before, after func()
	}
	faults := []fault{
		{workload: "deploy/auth"},
		{workload: "deploy/stats",
			before: func() {
				if _, err := lvmdpb.NewLVServiceClient(s.gw).CreateLV(withToken(callCtx(t), token), &lvmdpb.CreateLVRequest{Name: volume, SizeGb: 1}); err != nil {
					t.Fatalf("CreateLV through the gateway: %v", err)
				}
			},
			after: func() { waitUsage("a volume made while stats' pods went", volumes0+1, avail0-1<<30) }},
		{workload: "deploy/kaas"},
		{workload: "deploy/vagrant-server", before: func() { queue(3) }},
		{workload: "deploy/vagrant-runner", before: func() { queue(3) }},
		{workload: "deploy/cnpgi-plugin", before: func() { walName, _ = archiveSegment(t, k, token, walServer) }},
		// The gateway's pods are new: a new forward, a new connection.
		{workload: "deploy/gateway", after: func() { k.connectGateway(t); vagrant = vagrantpb.NewVagrantClient(s.gw) }},
		{workload: "daemonset/lvmd-agent",
			before: func() {
				if _, err := lvmdpb.NewLVServiceClient(s.gw).RemoveLV(withToken(callCtx(t), token), &lvmdpb.RemoveLVRequest{Name: volume}); err != nil {
					t.Fatalf("RemoveLV through the gateway: %v", err)
				}
			},
			after: func() { waitUsage("the volume removed just before lvmd-agent's pods went", volumes0, avail0) }},
	}
	for _, f := range faults {
		name := strings.TrimPrefix(strings.TrimPrefix(f.workload, "deploy/"), "daemonset/")
		if f.before != nil {
			f.before()
		}
		began := time.Now()
		k.run(t, "-n", "plinth", "delete", "pod", "-l", "app.kubernetes.io/name="+name, "--timeout=2m")
		k.run(t, "-n", "plinth", "rollout", "status", f.workload, "--timeout=3m")
		ready := time.Since(began)
		if f.after != nil {
			f.after()
		}
		// Ready is not yet reachable: kube-proxy follows the new endpoints a moment later.
		for _, p := range probes {
			if p.backend == name {
				if err := eventually(time.Minute, 100*time.Millisecond, func() error { return p.call(withToken(callCtx(t), token), s.gw) }); err != nil {
					t.Errorf("%s through the gateway after %s's pods went: %v", p.name, name, err)
				}
			}
		}
		t.Logf("%s: pods deleted, Ready again in %s, answering through the gateway in %s", f.workload,
			ready.Round(100*time.Millisecond), time.Since(began).Round(100*time.Millisecond))
	}
	began := time.Now()
	if err := k.cluster.RestartKubelet(k.ctx); err != nil {
		t.Fatalf("kubelet killed and started again: %v", err)
	}
	k.run(t, "wait", "node", "--all", "--for=condition=Ready", "--timeout=3m")
	k.run(t, "-n", "plinth", "wait", "pod", "--all", "--for=condition=Ready", "--timeout=3m")
	t.Logf("kubelet killed: node and every pod Ready again in %s", time.Since(began).Round(100*time.Millisecond))
	// The kubelet's streams went with it, the port-forwards too: new ones, new connections.
	k.connectGateway(t)
	vagrant = vagrantpb.NewVagrantClient(s.gw)
	k.natsAsAdmin(t)
	for _, p := range probes {
		succeeds(t, s.gw, p, token)
	}

	// Every job queued around the vagrant pods' deaths ran to SUCCESS.
	for _, id := range jobs {
		var state vagrantpb.Job_State
		if err := eventually(2*time.Minute, 500*time.Millisecond, func() error {
			job, err := vagrant.GetJob(vagrantCtx(callCtx(t), vagrantToken), &vagrantpb.GetJobRequest{JobId: id})
			if err != nil {
				return err
			}
			if state = job.GetState(); !slices.Contains([]vagrantpb.Job_State{vagrantpb.Job_SUCCESS, vagrantpb.Job_ERROR}, state) {
				return fmt.Errorf("still %s", state)
			}
			return nil
		}); err != nil || state != vagrantpb.Job_SUCCESS {
			t.Errorf("job %s queued as vagrant's pods went: %s, %v; want SUCCESS", id, state, err)
		}
	}
	// The segment archived just before the plugin's pod went was announced.
	if ev := waitWALArchived(t, s.endpoints, walServer, walStart); !slices.Contains(ev.GetWalNames(), walName) {
		t.Errorf("the event of the segment archived as cnpgi-plugin's pod went: %v, want %s", ev, walName)
	}
}
