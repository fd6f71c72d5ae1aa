package e2e

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
)

// journeyKaasCluster: a user creates a cluster through the gateway; kaas (vagrant provider)
// has the launcher's vagrant-runner make its control-plane machine, a netns machine on this
// host; the machine's address comes back through kaas (GetClusterNodesStatus) and, through
// kaas's events, in stats' node list; the cluster becomes RUNNING (Kubernetes up on the
// machine: etcd, kube-apiserver, kwok's Node, checked by kaas at the machine's address);
// deleting the cluster releases the machine.
func (s *journeySuite) journeyKaasCluster(t *testing.T) {
	if os.Geteuid() != 0 {
		skipOrFail(t, "the runner's netns machines need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		skipOrFail(t, "the runner's netns machines need iproute2 (apt-get install iproute2)")
	}
	if fi, err := os.Stat("/usr/bin/etcd"); err != nil || fi.Mode().Perm()&0o111 == 0 {
		skipOrFail(t, "kaas refuses clusters without etcd (apt-get install etcd-server)")
	}
	s.requireService(t, "kaas")
	s.requireService(t, "vagrant-runner")
	s.requireService(t, "stats")
	token := s.login(t)
	kaas := kaaspb.NewClusterClient(s.gw)
	name := "j" + randomHex(t, 3)
	asked := time.Now()
	created, err := kaas.CreateCluster(withToken(callCtx(t), token), &kaaspb.CreateClusterMsg{Name: name, K8SVersion: "v1.32.13",
		ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 1}})
	if err != nil || !created.GetOk() {
		t.Fatalf("CreateCluster through the gateway: %v, %v", created, err)
	}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_, _ = kaas.DeleteCluster(withToken(callCtx(t), token), &kaaspb.DeleteClusterMsg{Name: name})
		}
	})

	// The machine: a vagrant target that the runner brought up, with an address of the
	// runner's netns subnet.
	var machine *kaaspb.GetClusterNodesStatusReply_MachineStatus
	err = eventually(3*time.Minute, 500*time.Millisecond, func() error {
		resp, err := kaas.GetClusterNodesStatus(withToken(callCtx(t), token), &kaaspb.GetClusterNodesStatusMsg{ClusterName: name})
		if err != nil {
			return err
		}
		for _, m := range resp.GetMachines() {
			if ip, err := netip.ParseAddr(m.GetMaasIPAddr()); err == nil && netip.MustParsePrefix("10.213.0.0/24").Contains(ip) {
				machine = m
				return nil
			}
		}
		return fmt.Errorf("no machine with an address yet: %v", resp.GetMachines())
	})
	if err != nil {
		c, _ := kaas.GetCluster(withToken(callCtx(t), token), &kaaspb.GetClusterMsg{Name: name})
		t.Fatalf("cluster %s: %v (cluster: %v)", name, err, c.GetCluster())
	}
	t.Logf("machine %s (vagrant target %s) at %s, provider status %q", machine.GetMaasHostname(),
		machine.GetMaasSystemId(), machine.GetMaasIPAddr(), machine.GetMaasNodeStatus())

	// stats learns of the machine from kaas's events.
	stats := statspb.NewStatsServiceClient(s.gw)
	err = eventually(30*time.Second, 200*time.Millisecond, func() error {
		resp, err := stats.GetClusterNodes(withToken(callCtx(t), token), &statspb.GetClusterNodesRequest{})
		if err != nil {
			return err
		}
		for _, n := range resp.GetNodes() {
			if n.GetInternalIp() == machine.GetMaasIPAddr() && slices.Contains(n.GetRoles(), "control-plane") {
				return nil
			}
		}
		return fmt.Errorf("stats lists %v", resp.GetNodes())
	})
	if err != nil {
		t.Errorf("stats never listed the control-plane machine at %s: %v", machine.GetMaasIPAddr(), err)
	}

	// The cluster is RUNNING: kaas itself reached the machine's API server at its address (TLS
	// with the cluster's CA, the machine's IP in the serving certificate) and saw its Node
	// Ready, and hands out a kubeconfig. Under compose that address is on a bridge inside the
	// runner's container, which kaas shares.
	err = eventually(5*time.Minute, time.Second, func() error {
		c, err := kaas.GetCluster(withToken(callCtx(t), token), &kaaspb.GetClusterMsg{Name: name})
		if err != nil {
			return err
		}
		switch st := c.GetCluster().GetStatus(); st {
		case kaaspb.ClusterStatus_RUNNING:
			if c.GetCluster().GetKubeconfig() == "" {
				return errors.New("RUNNING without a kubeconfig")
			}
			t.Logf("cluster %s RUNNING %s after CreateCluster: %s", name, time.Since(asked).Round(100*time.Millisecond), c.GetCluster().GetStatusMessage())
			return nil
		case kaaspb.ClusterStatus_ERROR:
			return retryStop{fmt.Errorf("cluster in ERROR: %s", c.GetCluster().GetStatusMessage())}
		default:
			return fmt.Errorf("%s: %s", st, c.GetCluster().GetStatusMessage())
		}
	})
	if err != nil {
		t.Errorf("cluster %s never RUNNING: %v", name, err)
	}

	if resp, err := kaas.DeleteCluster(withToken(callCtx(t), token), &kaaspb.DeleteClusterMsg{Name: name}); err != nil || !resp.GetOk() {
		t.Fatalf("DeleteCluster through the gateway: %v, %v", resp, err)
	}
	deleted = true
	err = eventually(3*time.Minute, 500*time.Millisecond, func() error {
		c, err := kaas.GetCluster(withToken(callCtx(t), token), &kaaspb.GetClusterMsg{Name: name})
		if status.Code(err) == codes.NotFound || (err == nil && !c.GetOk()) {
			return nil
		}
		return fmt.Errorf("cluster still there: %v, %v", c.GetCluster(), err)
	})
	if err != nil {
		t.Errorf("after DeleteCluster: %v", err)
	}
}
