package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	"github.com/plinth-dev/plinth/libs/kubetest"
)

const (
	// topolvmImage is the image the test makes around make tools-k8s's bin/topolvm-node;
	// testdata/topolvm-node.yaml runs it.
	topolvmImage = "plinth.local/topolvm-node:v0.11.1"
	// topolvmCapacity prefixes the Node annotations TopoLVM's node plugin keeps from lvmd's
	// Watch: one per device class, and 00default for the default class.
	topolvmCapacity = "capacity.topolvm.cybozu.com/"
	// topolvmNodeFinalizer is what the node plugin puts on its Node (topolvm-controller,
	// not run here, would clean up after the Node).
	topolvmNodeFinalizer = "topolvm.cybozu.com/node"
)

var logicalVolumes = schema.GroupVersionResource{Group: "topolvm.cybozu.com", Version: "v1", Resource: "logicalvolumes"}

// checkTopoLVMNodePlugin: TopoLVM's own node plugin (v0.11.1, from its Go module) runs as a
// DaemonSet beside lvmd-agent's and talks lvmd to it over the node's /run/topolvm/lvmd.sock.
// The Node gets the capacity annotations from lvmd's Watch (what lvmd-agent reports through
// the gateway); a LogicalVolume object becomes an LV named by its UID (CreateLV), seen through
// the gateway and by lvs on the node; a larger spec.size resizes it (ResizeLV); deleting the
// object removes the LV (RemoveLV) and the capacity comes back.
func (k *kubeStack) checkTopoLVMNodePlugin(t *testing.T) {
	ctx := k.ctx
	bin := kubetest.Binary(t, "topolvm-node")
	if err := k.cluster.ImportProgram(ctx, topolvmImage, bin); err != nil {
		t.Fatal(err)
	}
	crdCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := kubetest.CreateCRDs(crdCtx, k.cluster.Config, kubetest.TopoLVMCRDs(t)...); err != nil {
		t.Fatal(err)
	}
	k.run(t, "apply", "-f", "e2e/testdata/topolvm-node.yaml")
	t.Cleanup(func() { k.removeTopoLVM(t) })
	k.run(t, "-n", "topolvm-system", "rollout", "status", "daemonset/topolvm-node", "--timeout=3m")

	token := k.s.login(t)
	vg := lvmdpb.NewVGServiceClient(k.s.gw)
	freeBytes := func() uint64 {
		t.Helper()
		free, err := vg.GetFreeBytes(withToken(callCtx(t), token), &lvmdpb.GetFreeBytesRequest{DeviceClass: "dev"})
		if err != nil {
			t.Fatalf("lvmd-agent GetFreeBytes through the gateway: %v", err)
		}
		return free.GetFreeBytes()
	}
	// The node's annotations follow lvmd-agent's Watch: both the class and the default.
	capacityIs := func(what string, want uint64) {
		t.Helper()
		var got map[string]string
		if err := eventually(time.Minute, 200*time.Millisecond, func() error {
			node, err := k.cluster.Client.CoreV1().Nodes().Get(ctx, k.cluster.NodeName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			got = node.Annotations
			for _, key := range []string{topolvmCapacity + "dev", topolvmCapacity + "00default"} {
				if got[key] != strconv.FormatUint(want, 10) {
					return fmt.Errorf("%s is %q", key, got[key])
				}
			}
			return nil
		}); err != nil {
			t.Fatalf("%s: the Node's TopoLVM capacity is not lvmd-agent's free space %d: %v (annotations %v)", what, want, err, got)
		}
	}
	free := freeBytes()
	capacityIs("at start", free)

	lvs := dynamic.NewForConfigOrDie(k.cluster.Config).Resource(logicalVolumes)
	name := "e2e-" + randomHex(t, 4)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "topolvm.cybozu.com/v1", "kind": "LogicalVolume",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"name": name, "nodeName": k.cluster.NodeName, "size": "1Gi", "deviceClass": "dev"},
	}}
	created, err := lvs.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create LogicalVolume %s: %v", name, err)
	}
	uid := string(created.GetUID())
	// The plugin answers in status: volumeID is the LV's name (the object's UID), code 0.
	statusIs := func(what, size string) {
		t.Helper()
		var last map[string]any
		if err := eventually(time.Minute, 200*time.Millisecond, func() error {
			got, err := lvs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			last, _, _ = unstructured.NestedMap(got.Object, "status")
			id, _, _ := unstructured.NestedString(got.Object, "status", "volumeID")
			current, _, _ := unstructured.NestedString(got.Object, "status", "currentSize")
			if id != uid || current != size {
				return fmt.Errorf("status %v", last)
			}
			return nil
		}); err != nil {
			t.Fatalf("%s: LogicalVolume %s: want volumeID %s and currentSize %s: %v", what, name, uid, size, err)
		}
	}
	// The LV as lvmd-agent lists it through the gateway and as lvs sees it on the node.
	lvIs := func(what string, sizeGB uint64) {
		t.Helper()
		list, err := vg.GetLVList(withToken(callCtx(t), token), &lvmdpb.GetLVListRequest{DeviceClass: "dev"})
		if err != nil {
			t.Fatalf("%s: GetLVList through the gateway: %v", what, err)
		}
		var found *lvmdpb.LogicalVolume
		for _, v := range list.GetVolumes() {
			if v.GetName() == uid {
				found = v
			}
		}
		switch {
		case sizeGB == 0 && found != nil:
			t.Errorf("%s: lvmd-agent still lists LV %s: %v", what, uid, found)
		case sizeGB != 0 && (found == nil || found.GetSizeGb() != sizeGB):
			t.Errorf("%s: lvmd-agent lists %v, want LV %s of %d GiB", what, found, uid, sizeGB)
		}
		// lvs's standard output alone: it warns on standard error where device-mapper is
		// missing (lvmd-agent then keeps LVs in LVM's metadata only).
		out, err := exec.CommandContext(ctx, "lvs", "--noheadings", "--units", "b", "--nosuffix", "-o", "lv_size", "plinth_kube/"+uid).Output()
		switch {
		case sizeGB == 0 && err == nil:
			t.Errorf("%s: lvs on the node still shows plinth_kube/%s: %s", what, uid, out)
		case sizeGB != 0 && (err != nil || strings.TrimSpace(string(out)) != strconv.FormatUint(sizeGB<<30, 10)):
			t.Errorf("%s: lvs plinth_kube/%s on the node: %q, %v; want %d bytes", what, uid, out, err, sizeGB<<30)
		}
	}

	statusIs("created", "1Gi")
	lvIs("created", 1)
	capacityIs("after the 1 GiB volume", free-1<<30)

	patch := []byte(`{"spec":{"size":"2Gi"}}`)
	if _, err := lvs.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("resize LogicalVolume %s: %v", name, err)
	}
	statusIs("resized", "2Gi")
	lvIs("resized", 2)
	capacityIs("after the resize to 2 GiB", free-2<<30)

	if err := lvs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete LogicalVolume %s: %v", name, err)
	}
	// The plugin removes the LV, then its finalizer: the object goes.
	if err := eventually(time.Minute, 200*time.Millisecond, func() error {
		if _, err := lvs.Get(ctx, name, metav1.GetOptions{}); err == nil {
			return fmt.Errorf("still there")
		}
		return nil
	}); err != nil {
		t.Fatalf("deleted LogicalVolume %s: %v", name, err)
	}
	lvIs("deleted", 0)
	capacityIs("after the delete", free)
}

// removeTopoLVM takes testdata/topolvm-node.yaml and the CRD away again and leaves the Node
// without the plugin's finalizer and annotations, as it was.
func (k *kubeStack) removeTopoLVM(t *testing.T) {
	if out, err := k.try("delete", "--ignore-not-found", "--wait", "--timeout=2m", "-f", "e2e/testdata/topolvm-node.yaml"); err != nil {
		t.Errorf("delete testdata/topolvm-node.yaml: %v\n%s", err, out)
	}
	if out, err := k.try("delete", "--ignore-not-found", "crd", "logicalvolumes.topolvm.cybozu.com"); err != nil {
		t.Errorf("delete the LogicalVolume CRD: %v\n%s", err, out)
	}
	nodes := k.cluster.Client.CoreV1().Nodes()
	node, err := nodes.Get(k.ctx, k.cluster.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	for key := range node.Annotations {
		if strings.HasPrefix(key, topolvmCapacity) {
			delete(node.Annotations, key)
		}
	}
	var finalizers []string
	for _, f := range node.Finalizers {
		if f != topolvmNodeFinalizer {
			finalizers = append(finalizers, f)
		}
	}
	node.Finalizers = finalizers
	if _, err := nodes.Update(k.ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Errorf("the Node without TopoLVM's finalizer and annotations: %v", err)
	}
}
