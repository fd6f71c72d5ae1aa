package inventory

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

func payload(t testing.TB, m proto.Message) []byte {
	t.Helper()
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseChecksEveryField(t *testing.T) {
	h := Handler{}
	huge := strings.Repeat("n", input.MaxName+1)
	cases := []struct {
		name    string
		subject string
		msg     proto.Message
		field   string // "" when the event is valid
	}{
		{"heartbeat", heartbeatSubject, &eventsv1.NodeHeartbeat{Node: "n1", Addresses: []string{"10.0.0.1"},
			DeviceClasses: []*eventsv1.DeviceClassCapacity{{Name: "ssd", VolumeGroup: "vg"}}}, ""},
		{"no node", heartbeatSubject, &eventsv1.NodeHeartbeat{}, "node"},
		{"huge node", heartbeatSubject, &eventsv1.NodeHeartbeat{Node: huge}, "node"},
		{"NUL node", capacitySubject, &eventsv1.CapacityChanged{Node: "a\x00b", DeviceClass: &eventsv1.DeviceClassCapacity{Name: "x"}}, "node"},
		{"huge address", heartbeatSubject, &eventsv1.NodeHeartbeat{Node: "n", Addresses: []string{strings.Repeat("1", 100)}}, "addresses[0]"},
		{"too many addresses", heartbeatSubject, &eventsv1.NodeHeartbeat{Node: "n", Addresses: make([]string, 33)}, "addresses"},
		{"class without name", heartbeatSubject, &eventsv1.NodeHeartbeat{Node: "n", DeviceClasses: []*eventsv1.DeviceClassCapacity{{}}}, "device_classes[0].name"},
		{"capacity without class", capacitySubject, &eventsv1.CapacityChanged{Node: "n"}, "device_class.name"},
		{"machine", machineSubject, &eventsv1.MachineStateChanged{Name: "m", Cluster: "c", Message: strings.Repeat("x", 10000)}, ""},
		{"machine huge pool", machineSubject, &eventsv1.MachineStateChanged{Name: "m", Pool: huge}, "pool"},
		{"cluster deleted", clusterSubject, &eventsv1.ClusterStatusChanged{Cluster: "c", Deleted: true}, ""},
		{"deleted cluster without name", clusterSubject, &eventsv1.ClusterStatusChanged{Deleted: true}, "cluster"},
		{"cluster without name", clusterSubject, &eventsv1.ClusterStatusChanged{Status: 2}, "cluster"},
		{"cluster with a huge actor", clusterSubject, &eventsv1.ClusterStatusChanged{Cluster: "c", Actor: &eventsv1.Actor{UserId: huge}}, "actor.user_id"},
		{"volume created", volumeCreatedSubject, &eventsv1.VolumeCreated{Node: "n", Name: "v", Actor: &eventsv1.Actor{UserId: "u", Username: "ops"}}, ""},
		{"volume removed by a NUL actor", volumeRemovedSubject, &eventsv1.VolumeRemoved{Name: "v", Actor: &eventsv1.Actor{UserId: "u", Username: "o\x00"}}, "actor.username"},
		{"volume resized", volumeResizedSubject, &eventsv1.VolumeResized{Name: "v", SizeBytes: 2 << 30, PreviousSizeBytes: 1 << 30}, ""},
	}
	for _, c := range cases {
		apply, err := h.parse(c.subject, payload(t, c.msg), t0)
		var ie *input.Error
		switch {
		case c.field == "" && (err != nil || apply == nil):
			t.Errorf("%s: %v", c.name, err)
		case c.field != "" && (!errors.As(err, &ie) || ie.Field != c.field):
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.field)
		}
	}
	if apply, err := h.parse(clusterSubject, payload(t, &eventsv1.ClusterStatusChanged{Cluster: "c", Status: 2}), t0); apply == nil || err != nil {
		t.Errorf("a status change of a live cluster is activity: %v", err)
	}
	if apply, err := h.parse(heartbeatSubject, []byte{0xff, 0xff}, t0); apply != nil || err == nil {
		t.Error("an undecodable payload must be refused")
	}
	m, _ := machine(&eventsv1.MachineStateChanged{Name: "m", Message: strings.Repeat("x", 10000)}, t0)
	if len(m.Message) > maxMessage {
		t.Errorf("a 10 kB message kept %d bytes", len(m.Message))
	}
}

func TestEventTimeIsNeverInTheFuture(t *testing.T) {
	h := Handler{Now: func() time.Time { return t0 }}
	if got := h.eventTime(t0.Add(time.Hour)); !got.Equal(t0) {
		t.Errorf("future: %v", got)
	}
	if got := h.eventTime(time.Time{}); !got.Equal(t0) {
		t.Errorf("missing: %v", got)
	}
	if got := h.eventTime(t0.Add(-time.Minute)); !got.Equal(t0.Add(-time.Minute)) {
		t.Errorf("past: %v", got)
	}
}

// FuzzParseEvent feeds the event decoders payloads a broken or hostile publisher could send:
// whatever decodes must fit the inventory's bounds.
func FuzzParseEvent(f *testing.F) {
	subjects := []string{heartbeatSubject, capacitySubject, machineSubject, clusterSubject}
	f.Add(uint8(0), payload(f, &eventsv1.NodeHeartbeat{Node: "n1", Addresses: []string{"10.0.0.1"}, IntervalSeconds: 10,
		DeviceClasses: []*eventsv1.DeviceClassCapacity{{Name: "ssd", VolumeGroup: "vg", SizeBytes: 1 << 40, FreeBytes: 1 << 39, VolumeCount: 3}}}))
	f.Add(uint8(1), payload(f, &eventsv1.CapacityChanged{Node: "n1", DeviceClass: &eventsv1.DeviceClassCapacity{Name: "ssd", SizeBytes: ^uint64(0)}}))
	f.Add(uint8(2), payload(f, &eventsv1.MachineStateChanged{Cluster: "c", Name: "m", State: 2, Role: 1, Addresses: []string{"10.1.0.1"}}))
	f.Add(uint8(3), payload(f, &eventsv1.ClusterStatusChanged{Cluster: "c", Deleted: true}))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		h := Handler{}
		subject := subjects[int(which)%len(subjects)]
		_, err := h.parse(subject, data, t0)
		if err != nil {
			return
		}
		switch subject {
		case heartbeatSubject:
			var m eventsv1.NodeHeartbeat
			_ = proto.Unmarshal(data, &m)
			hb, err := heartbeat(&m, t0)
			if err != nil || hb.Node == "" || len(hb.Node) > input.MaxName || len(hb.Classes) > maxClasses {
				t.Fatalf("accepted heartbeat out of bounds: %+v %v", hb, err)
			}
			for _, c := range hb.Classes {
				if c.SizeBytes < 0 || c.FreeBytes < 0 || c.Volumes < 0 {
					t.Fatalf("negative sizes %+v", c)
				}
			}
		case machineSubject:
			var m eventsv1.MachineStateChanged
			_ = proto.Unmarshal(data, &m)
			mc, err := machine(&m, t0)
			if err != nil || len(mc.Message) > maxMessage || strings.ContainsRune(mc.Name, 0) {
				t.Fatalf("accepted machine out of bounds: %v", err)
			}
		}
	})
}

func TestActivitySummaries(t *testing.T) {
	for _, c := range []struct {
		subject string
		msg     proto.Message
		want    string
	}{
		{clusterSubject, &eventsv1.ClusterStatusChanged{Cluster: "c1", Status: 1, K8SVersion: "v1.33.13", Provider: "vagrant"},
			"cluster c1 created (Kubernetes v1.33.13 on vagrant): provisioning"},
		{clusterSubject, &eventsv1.ClusterStatusChanged{Cluster: "c1", Status: 4, PreviousStatus: 2, StatusMessage: "deleting"},
			"cluster c1: running → stopping (deleting)"},
		{clusterSubject, &eventsv1.ClusterStatusChanged{Cluster: "c1", Status: 4, PreviousStatus: 4, Deleted: true}, "cluster c1 deleted"},
		{volumeCreatedSubject, &eventsv1.VolumeCreated{Node: "n1", DeviceClass: "ssd", Name: "v", SizeBytes: 1 << 30, RestoredFrom: "s3://b/x"},
			"volume v (1 GiB) created in class ssd on node n1, restored from s3://b/x"},
		{volumeRemovedSubject, &eventsv1.VolumeRemoved{Node: "n1", DeviceClass: "ssd", Name: "v"}, "volume v removed from class ssd on node n1"},
		{volumeResizedSubject, &eventsv1.VolumeResized{Node: "n1", DeviceClass: "ssd", Name: "v", SizeBytes: 1536 << 20, PreviousSizeBytes: 1 << 30},
			"volume v resized from 1 GiB to 1536 MiB in class ssd on node n1"},
	} {
		var got string
		if c.subject == clusterSubject {
			got = clusterSummary(c.msg.(*eventsv1.ClusterStatusChanged))
		} else {
			a, ok, err := volumeActivity(c.subject, payload(t, c.msg), t0)
			if !ok || err != nil {
				t.Fatalf("%s: %v %v", c.subject, ok, err)
			}
			got = a.Summary
		}
		if got != c.want {
			t.Errorf("summary %q, want %q", got, c.want)
		}
	}
}
