package bounds

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"

	kaas "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

func pools(n, labels int) []*kaas.MachineSpec {
	out := make([]*kaas.MachineSpec, n)
	for i := range out {
		out[i] = &kaas.MachineSpec{Name: "pool", Labels: make([]*kaas.KubernetesLabel, labels)}
		for j := range labels {
			out[i].Labels[j] = &kaas.KubernetesLabel{Name: "k", Value: "v"}
		}
	}
	return out
}

func TestCheck(t *testing.T) {
	tooManyLabels := pools(3, kaasLabels)
	tooManyLabels[2].Labels = append(tooManyLabels[2].Labels, &kaas.KubernetesLabel{})
	jobLabels := map[string]string{}
	for i := range 65 {
		jobLabels[string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
	}
	for _, tc := range []struct {
		name string
		msg  interface{ ProtoReflect() protoreflect.Message }
		want string // "" accepted
	}{
		{"at the bounds", &kaas.CreateClusterMsg{Name: "c", WorkerNodePools: pools(kaasPools, kaasLabels)}, ""},
		{"one pool too many", &kaas.CreateClusterMsg{Name: "c", WorkerNodePools: pools(kaasPools+1, 0)},
			"worker_node_pools: has 33 entries; at most 32 are allowed"},
		{"a nested list over its bound", &kaas.CreateClusterMsg{WorkerNodePools: tooManyLabels},
			"worker_node_pools[2].labels: has 33 entries; at most 32 are allowed"},
		{"a map inside a singular message", &vagrant.QueueJobRequest{Job: &vagrant.Job{Labels: jobLabels}},
			"job.labels: has 65 entries; at most 64 are allowed"},
		{"empty", &vagrant.QueueJobRequest{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.msg.ProtoReflect())
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			s := status.Convert(err)
			if s.Code() != codes.InvalidArgument || s.Message() != tc.want {
				t.Fatalf("got %v %q; want InvalidArgument %q", s.Code(), s.Message(), tc.want)
			}
		})
	}
}

// TestReasons: every bound says why, and a field bounded otherwise says by what.
func TestReasons(t *testing.T) {
	for f, b := range Fields {
		if b.Why == "" || b.Max < 0 {
			t.Errorf("%s: %+v; a bound needs a reason and a non-negative Max", f, b)
		}
	}
}
