package app_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas/maastest"
)

// statusEvents reads cluster's ClusterStatusChanged events from the stream until one says
// deleted (or timeout), and its MachineStateChanged events.
func statusEvents(t *testing.T, e *env, cluster string, timeout time.Duration) ([]*eventsv1.ClusterStatusChanged, []*eventsv1.MachineStateChanged) {
	t.Helper()
	nc, err := nats.Connect(e.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, events.StreamOf(&eventsv1.ClusterStatusChanged{}).Name, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var clusters []*eventsv1.ClusterStatusChanged
	var machines []*eventsv1.MachineStateChanged
	for ctx.Err() == nil {
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for msg := range batch.Messages() {
			switch msg.Subject() {
			case events.SubjectOf(&eventsv1.ClusterStatusChanged{}):
				ev := &eventsv1.ClusterStatusChanged{}
				if proto.Unmarshal(msg.Data(), ev) == nil && ev.GetCluster() == cluster {
					clusters = append(clusters, ev)
				}
			case events.SubjectOf(&eventsv1.MachineStateChanged{}):
				ev := &eventsv1.MachineStateChanged{}
				if proto.Unmarshal(msg.Data(), ev) == nil && ev.GetCluster() == cluster {
					machines = append(machines, ev)
				}
			}
		}
		if n := len(clusters); n > 0 && clusters[n-1].GetDeleted() {
			return clusters, machines
		}
	}
	t.Fatalf("no deleted event for %s within %v (got %d status events)", cluster, timeout, len(clusters))
	return nil, nil
}

// assertStatusEvents checks that cluster's status events went through want, in order (other
// statuses may come between), ended with its deletion, and that machine events carried the
// provider's view.
func assertStatusEvents(t *testing.T, e *env, cluster string, want []kaaspb.ClusterStatus) {
	t.Helper()
	clusters, machines := statusEvents(t, e, cluster, 30*time.Second)
	var got []kaaspb.ClusterStatus
	for _, ev := range clusters {
		got = append(got, kaaspb.ClusterStatus(ev.GetStatus()))
	}
	i := 0
	for _, s := range got {
		if i < len(want) && s == want[i] {
			i++
		}
	}
	if i != len(want) {
		t.Fatalf("status events %v do not go through %v", got, want)
	}
	if clusters[0].GetPreviousStatus() != eventsv1.KaasClusterStatus_KAAS_CLUSTER_STATUS_UNSPECIFIED {
		t.Fatalf("first event %v", clusters[0])
	}
	// The user's calls (create, delete) name the caller; the reconciler's work names nobody.
	for _, ev := range clusters {
		var want string
		switch ev.GetStatus() {
		case eventsv1.KaasClusterStatus_KAAS_CLUSTER_STATUS_PROVISIONING, eventsv1.KaasClusterStatus_KAAS_CLUSTER_STATUS_STOPPING:
			if ev.GetPreviousStatus() == eventsv1.KaasClusterStatus_KAAS_CLUSTER_STATUS_UNSPECIFIED || !ev.GetDeleted() && ev.GetStatus() == eventsv1.KaasClusterStatus_KAAS_CLUSTER_STATUS_STOPPING {
				want = e.accountID
			}
		}
		if want != "" && (ev.GetActor().GetUserId() != want || ev.GetActor().GetUsername() != "admin") {
			t.Fatalf("%v -> %v: actor %v, want the admin (%s)", ev.GetPreviousStatus(), ev.GetStatus(), ev.GetActor(), want)
		}
		if ev.GetStatus() == eventsv1.KaasClusterStatus_KAAS_CLUSTER_STATUS_RUNNING && ev.GetActor() != nil {
			t.Fatalf("the reconciler's %v -> RUNNING names actor %v", ev.GetPreviousStatus(), ev.GetActor())
		}
	}
	deployed := slices.ContainsFunc(machines, func(m *eventsv1.MachineStateChanged) bool {
		return m.GetState() == eventsv1.MachineState_MACHINE_STATE_READY && len(m.GetAddresses()) > 0 && m.GetProviderStatus() != "" && m.GetProviderId() != ""
	})
	released := slices.ContainsFunc(machines, func(m *eventsv1.MachineStateChanged) bool {
		return m.GetState() == eventsv1.MachineState_MACHINE_STATE_RELEASED
	})
	if !deployed || !released {
		t.Fatalf("machine events lack a ready machine with its addresses or a released one: %d events", len(machines))
	}
}

// userDataFiles returns a MAAS machine's user data files (maastest.Machine.Files).
func userDataFiles(t *testing.T, m maastest.Machine) string {
	t.Helper()
	f, err := m.Files()
	if err != nil {
		t.Fatal(err)
	}
	return f
}
