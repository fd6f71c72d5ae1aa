package upstreamtest

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/cloudnative-pg/cnpg-i/pkg/lifecycle"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// podSpec is the part of a patched Pod (or Job template) the lifecycle test checks.
type podSpec struct {
	InitContainers []k8sContainer `json:"initContainers"`
	Containers     []k8sContainer `json:"containers"`
	Volumes        []struct {
		Name     string    `json:"name"`
		EmptyDir *struct{} `json:"emptyDir"`
	} `json:"volumes"`
}

type k8sContainer struct {
	Name            string `json:"name"`
	Image           string `json:"image"`
	RestartPolicy   string `json:"restartPolicy"`
	SecurityContext struct {
		ReadOnlyRootFilesystem bool `json:"readOnlyRootFilesystem"`
	} `json:"securityContext"`
	VolumeMounts []struct {
		MountPath string `json:"mountPath"`
	} `json:"volumeMounts"`
}

func (c k8sContainer) mounts(path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// checkSidecar asserts the sidecar sits once, after CloudNativePG's init container, as a
// native sidecar sharing /plugins with the main container.
func checkSidecar(t *testing.T, spec podSpec, main string) {
	t.Helper()
	var sidecars int
	for _, c := range spec.InitContainers {
		if c.Name != "plinth-cnpgi" {
			continue
		}
		sidecars++
		if c.Image != sidecarImage || c.RestartPolicy != "Always" || !c.SecurityContext.ReadOnlyRootFilesystem || !c.mounts("/plugins") {
			t.Errorf("sidecar %+v", c)
		}
	}
	if sidecars != 1 || spec.InitContainers[0].Name != "bootstrap-controller" {
		t.Fatalf("init containers %+v", spec.InitContainers)
	}
	for _, c := range spec.Containers {
		if c.Name == main && !c.mounts("/plugins") {
			t.Errorf("%s does not mount /plugins", main)
		}
	}
	var volume bool
	for _, v := range spec.Volumes {
		volume = volume || (v.Name == "plugins" && v.EmptyDir != nil)
	}
	if !volume {
		t.Errorf("no plugins emptyDir among %+v", spec.Volumes)
	}
}

// TestLifecycle injects the sidecar into CloudNativePG's Pod and recovery Job through the
// upstream client, applying the patches as the operator does.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	p := startOperatorPlugin(t)
	c := lifecycle.NewOperatorLifecycleClient(p.conn)
	ctx := ctxT(t)

	caps, err := c.GetCapabilities(ctx, &lifecycle.OperatorLifecycleCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]lifecycle.OperatorOperationType_Type{}
	for _, lc := range caps.GetLifecycleCapabilities() {
		for _, op := range lc.GetOperationTypes() {
			got[lc.GetGroup()+"/"+lc.GetKind()] = append(got[lc.GetGroup()+"/"+lc.GetKind()], op.GetType())
		}
	}
	if !slices.Equal(got["/Pod"], []lifecycle.OperatorOperationType_Type{3, 6}) || !slices.Equal(got["batch/Job"], []lifecycle.OperatorOperationType_Type{3}) || len(got) != 2 {
		t.Fatalf("lifecycle capabilities %v", got)
	}

	pod, err := os.ReadFile("../operator/lifecycle/testdata/pod.json")
	if err != nil {
		t.Fatal(err)
	}
	op := func(t lifecycle.OperatorOperationType_Type) *lifecycle.OperatorOperationType {
		return &lifecycle.OperatorOperationType{Type: t}
	}
	def := cluster("pg", nil)
	res, err := c.LifecycleHook(ctx, &lifecycle.OperatorLifecycleRequest{OperationType: op(lifecycle.OperatorOperationType_TYPE_CREATE), ClusterDefinition: def, ObjectDefinition: pod})
	if err != nil {
		t.Fatal(err)
	}
	patched := applyPatch(t, pod, res.GetJsonPatch())
	var obj struct {
		APIVersion string  `json:"apiVersion"`
		Kind       string  `json:"kind"`
		Spec       podSpec `json:"spec"`
	}
	if err := json.Unmarshal(patched, &obj); err != nil {
		t.Fatal(err)
	}
	if obj.APIVersion != "v1" || obj.Kind != "Pod" {
		t.Fatalf("patched object is %s %s", obj.APIVersion, obj.Kind)
	}
	checkSidecar(t, obj.Spec, "postgres")
	again, err := c.LifecycleHook(ctx, &lifecycle.OperatorLifecycleRequest{OperationType: op(lifecycle.OperatorOperationType_TYPE_EVALUATE), ClusterDefinition: def, ObjectDefinition: patched})
	if err != nil || len(again.GetJsonPatch()) != 0 {
		t.Fatalf("evaluating the patched Pod: %s, %v; want no change", again.GetJsonPatch(), err)
	}
	for _, ty := range []lifecycle.OperatorOperationType_Type{lifecycle.OperatorOperationType_TYPE_PATCH, lifecycle.OperatorOperationType_TYPE_DELETE} {
		res, err := c.LifecycleHook(ctx, &lifecycle.OperatorLifecycleRequest{OperationType: op(ty), ClusterDefinition: def, ObjectDefinition: pod})
		if err != nil || len(res.GetJsonPatch()) != 0 {
			t.Fatalf("%v: %s, %v", ty, res.GetJsonPatch(), err)
		}
	}

	job, err := os.ReadFile("../operator/lifecycle/testdata/job.json")
	if err != nil {
		t.Fatal(err)
	}
	recovering := []byte(`{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster","metadata":{"name":"pg","namespace":"default"},"spec":{"instances":1,` +
		`"bootstrap":{"recovery":{"source":"origin"}},"externalClusters":[{"name":"origin","plugin":{"name":"` + pluginName + `","parameters":{"serverName":"old"}}}]}}`)
	res, err = c.LifecycleHook(ctx, &lifecycle.OperatorLifecycleRequest{OperationType: op(lifecycle.OperatorOperationType_TYPE_CREATE), ClusterDefinition: recovering, ObjectDefinition: job})
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Template struct {
				Spec podSpec `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(applyPatch(t, job, res.GetJsonPatch()), &j); err != nil {
		t.Fatal(err)
	}
	if j.APIVersion != "batch/v1" || j.Kind != "Job" {
		t.Fatalf("patched job is %s %s", j.APIVersion, j.Kind)
	}
	checkSidecar(t, j.Spec.Template.Spec, "full-recovery")

	_, err = c.LifecycleHook(ctx, &lifecycle.OperatorLifecycleRequest{OperationType: op(lifecycle.OperatorOperationType_TYPE_CREATE), ClusterDefinition: def,
		ObjectDefinition: []byte(`{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"other"}]}}`)})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a Pod without a postgres container: %v", err)
	}
	_, err = c.LifecycleHook(ctx, &lifecycle.OperatorLifecycleRequest{OperationType: op(lifecycle.OperatorOperationType_TYPE_CREATE), ObjectDefinition: pod})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("no cluster definition: %v", err)
	}
}
