package maas_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas/maastest"
)

var key = maas.APIKey{Consumer: "ck", Token: "tk", Secret: "s3cret"}

func newProvider(t *testing.T, srv *maastest.Server, k maas.APIKey) *maas.Provider {
	t.Helper()
	c, err := maas.NewClient(srv.URL(), k, nil, "kaas-test")
	if err != nil {
		t.Fatal(err)
	}
	return maas.New(c, maas.Options{Pool: "default"})
}

// until calls step until the machine reaches phase (or fails the test after 5 s).
func until(t *testing.T, phase provider.Phase, m *provider.Machine, step func(provider.Machine) (provider.Observation, error)) provider.Observation {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		o, err := step(*m)
		if err != nil {
			t.Fatal(err)
		}
		m.ProviderID, m.State = o.ProviderID, o.State
		if o.Phase == phase {
			return o
		}
		if o.Phase == provider.Failed || time.Now().After(deadline) {
			t.Fatalf("want %s, got %+v", phase, o)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMachineLifecycleAgainstTheStateMachine(t *testing.T) {
	srv := maastest.New(maastest.Options{Key: key})
	defer srv.Close()
	srv.Add(1, "standard")
	gpu := srv.Add(2, "gpu")
	p := newProvider(t, srv, key)
	ctx := context.Background()
	keys, err := pki.New("c1")
	if err != nil {
		t.Fatal(err)
	}
	cp := provider.Machine{ClusterUID: "u1", Cluster: "c1", Pool: cluster.ControlPlanePool, Name: "c1-control-plane-1", Role: cluster.RoleControlPlane, InstanceType: "gpu"}
	boot := provider.Bootstrap{Version: "v1.32.13", Init: true, PKI: keys, ControlPlaneSize: 1,
		Labels: map[string]string{cluster.LabelPrefix + "instance-type": "gpu", "team": "a"}}
	o := until(t, provider.Ready, &cp, func(m provider.Machine) (provider.Observation, error) { return p.Provision(ctx, m, boot) })
	if o.ProviderID != gpu[0].SystemID || o.Status != "Deployed" || len(o.Addresses) != 1 || o.Hostname != "node-002" {
		t.Fatalf("deployed %+v", o)
	}
	if h := srv.History(o.ProviderID); strings.Join(h, ">") != "Ready>Allocated>Deploying>Deployed" {
		t.Fatalf("history %v", h)
	}
	m, _ := srv.Machine(o.ProviderID)
	ud := string(m.UserData)
	for _, want := range []string{"#cloud-config", "/etc/kubernetes/pki/ca.key", "/usr/local/sbin/kaas-bootstrap"} {
		if !strings.Contains(ud, want) {
			t.Errorf("user data lacks %q", want)
		}
	}
	if !strings.Contains(userData(t, m), "kind: InitConfiguration") || !strings.Contains(userData(t, m), "kaas.plinth.dev/instance-type=gpu,team=a") {
		t.Errorf("first control-plane machine must run kubeadm init with its labels:\n%s", userData(t, m))
	}

	w := provider.Machine{ClusterUID: "u1", Cluster: "c1", Pool: "w", Name: "c1-w-1", Role: cluster.RoleWorker, InstanceType: "gpu"}
	join := provider.Bootstrap{Version: "v1.32.13", Endpoint: o.Addresses[0] + ":6443", PKI: keys}
	wo := until(t, provider.Ready, &w, func(m provider.Machine) (provider.Observation, error) { return p.Provision(ctx, m, join) })
	wm, _ := srv.Machine(wo.ProviderID)
	files := userData(t, wm)
	if !strings.Contains(files, "kind: JoinConfiguration") || strings.Contains(files, "controlPlane:") || strings.Contains(string(wm.UserData), "ca.key") {
		t.Errorf("a worker joins, without the cluster's keys:\n%s", files)
	}

	// No third gpu machine: the allocation waits (Pending), it is not an error.
	w2 := provider.Machine{ClusterUID: "u1", Cluster: "c1", Pool: "w", Name: "c1-w-2", Role: cluster.RoleWorker, InstanceType: "gpu"}
	if o, err := p.Provision(ctx, w2, join); err != nil || o.Phase != provider.Pending || !strings.Contains(o.Message, `no Ready MAAS machine with tag "gpu"`) {
		t.Fatalf("%+v %v", o, err)
	}

	// Upgrade: released without erasing, allocated again by system id, redeployed.
	up := join
	up.Version = "v1.33.13"
	until(t, provider.Ready, &w, func(m provider.Machine) (provider.Observation, error) { return p.Upgrade(ctx, m, up) })
	wm, _ = srv.Machine(wo.ProviderID)
	if wm.Deployments != 2 || !strings.Contains(string(wm.UserData), "") || !strings.Contains(userData(t, wm), "kubeadm=1.33.13-*") {
		t.Fatalf("upgrade redeploys with the new version: %d deployments", wm.Deployments)
	}

	until(t, provider.Gone, &w, func(m provider.Machine) (provider.Observation, error) { return p.Release(ctx, m) })
	if m, _ := srv.Machine(wo.ProviderID); m.Status != maas.StatusReady || m.AgentName != "" {
		t.Fatalf("released machine %+v", m)
	}
	// A failed deployment is a machine failure, not a provider error.
	srv.Do(func(ms []*maastest.Machine) { ms[0].FailDeploy = true })
	std := provider.Machine{ClusterUID: "u2", Cluster: "c2", Pool: "w", Name: "c2-w-1", Role: cluster.RoleWorker, InstanceType: "standard"}
	var fo provider.Observation
	for i := 0; i < 100; i++ {
		if fo, err = p.Provision(ctx, std, join); err != nil {
			t.Fatal(err)
		}
		std.ProviderID, std.State = fo.ProviderID, fo.State
		if fo.Phase != provider.Pending {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if fo.Phase != provider.Failed || !strings.Contains(fo.Message, "Failed deployment") {
		t.Fatalf("%+v", fo)
	}
	// Outage and a wrong key are errors (retried by the reconciler).
	srv.SetDown(true)
	if _, err := p.Observe(ctx, std); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("outage: %v", err)
	}
	srv.SetDown(false)
	bad := newProvider(t, srv, maas.APIKey{Consumer: "ck", Token: "tk", Secret: "wrong"})
	if _, err := bad.Observe(ctx, std); err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("wrong key: %v", err)
	}
}

func TestAllocationIsFoundAgainAfterALostAnswer(t *testing.T) {
	srv := maastest.New(maastest.Options{Key: key})
	defer srv.Close()
	srv.Add(2, "standard")
	p := newProvider(t, srv, key)
	keys, _ := pki.New("c")
	m := provider.Machine{ClusterUID: "u", Cluster: "c", Pool: "w", Name: "c-w-1", Role: cluster.RoleWorker, InstanceType: "standard"}
	boot := provider.Bootstrap{Version: "v1.32.13", Endpoint: "10.0.0.1:6443", PKI: keys}
	first, err := p.Provision(context.Background(), m, boot)
	if err != nil {
		t.Fatal(err)
	}
	// kaas crashed before it saved the system id: the next call must find the same machine.
	again, err := p.Provision(context.Background(), m, boot)
	if err != nil || again.ProviderID != first.ProviderID || len(srv.Allocated("plinth-kaas:u:")) != 1 {
		t.Fatalf("%+v %v; allocated %d", again, err, len(srv.Allocated("plinth-kaas:u:")))
	}
}

// TestAMachineReallocatedElsewhereIsNotTouched: MAAS gives a machine kaas released to
// another cluster (same API key, same owner). The old machine's record must not act on it:
// releasing it again would pull it from under the other cluster.
func TestAMachineReallocatedElsewhereIsNotTouched(t *testing.T) {
	srv := maastest.New(maastest.Options{Key: key})
	defer srv.Close()
	srv.Add(1, "standard")
	p := newProvider(t, srv, key)
	keys, _ := pki.New("c")
	boot := provider.Bootstrap{Version: "v1.32.13", Endpoint: "10.0.0.1:6443", PKI: keys}
	a := provider.Machine{ClusterUID: "a", Cluster: "a", Pool: "w", Name: "a-w-1", Role: cluster.RoleWorker, InstanceType: "standard"}
	until(t, provider.Ready, &a, func(m provider.Machine) (provider.Observation, error) {
		return p.Provision(context.Background(), m, boot)
	})
	stale := a
	until(t, provider.Gone, &a, func(m provider.Machine) (provider.Observation, error) { return p.Release(context.Background(), m) })
	b := provider.Machine{ClusterUID: "b", Cluster: "b", Pool: "w", Name: "b-w-1", Role: cluster.RoleWorker, InstanceType: "standard"}
	ob := until(t, provider.Ready, &b, func(m provider.Machine) (provider.Observation, error) {
		return p.Provision(context.Background(), m, boot)
	})
	if ob.ProviderID != stale.ProviderID {
		t.Fatal("the test needs MAAS to hand out the same machine again")
	}
	if o, err := p.Release(context.Background(), stale); err != nil || o.Phase != provider.Gone {
		t.Fatalf("stale release: %+v %v", o, err)
	}
	if o, _ := p.Observe(context.Background(), stale); o.Phase != provider.Gone {
		t.Fatalf("stale observe: %+v", o)
	}
	if m, _ := srv.Machine(ob.ProviderID); m.Status != maas.StatusDeployed || m.Releases != 1 {
		t.Fatalf("the other cluster's machine was touched: %s, %d releases", maas.StatusNames[m.Status], m.Releases)
	}
}

func userData(t *testing.T, m maastest.Machine) string {
	t.Helper()
	f, err := m.Files()
	if err != nil {
		t.Fatal(err)
	}
	return f
}
