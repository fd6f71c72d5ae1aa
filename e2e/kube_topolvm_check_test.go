package e2e

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
)

// topolvmClass is the device class of overlays/local's lvmd.yaml (thick, the default) on
// kube-up's volume group.
const topolvmClass, topolvmVG = "dev", "plinth_kube"

// topolvmCheck is what a TopoLVM node plugin check looks through: the plugin's LogicalVolume
// objects, and lvmd-agent's answers through the gateway.
type topolvmCheck struct {
	k     *kubeStack
	p     topolvmNodePlugin
	lvs   dynamic.NamespaceableResourceInterface
	vg    lvmdpb.VGServiceClient
	lv    lvmdpb.LVServiceClient
	token string
}

func newTopoLVMCheck(t *testing.T, k *kubeStack, p topolvmNodePlugin) *topolvmCheck {
	gvr := schema.GroupVersionResource{Group: p.group, Version: "v1", Resource: "logicalvolumes"}
	return &topolvmCheck{
		k: k, p: p, lvs: dynamic.NewForConfigOrDie(k.cluster.Config).Resource(gvr),
		vg: lvmdpb.NewVGServiceClient(k.s.gw), lv: lvmdpb.NewLVServiceClient(k.s.gw), token: k.s.login(t),
	}
}

// freeBytes is the class's free space as lvmd-agent reports it through the gateway.
func (c *topolvmCheck) freeBytes(t *testing.T) uint64 {
	t.Helper()
	free, err := c.vg.GetFreeBytes(withToken(callCtx(t), c.token), &lvmdpb.GetFreeBytesRequest{DeviceClass: topolvmClass})
	if err != nil {
		t.Fatalf("lvmd-agent GetFreeBytes through the gateway: %v", err)
	}
	return free.GetFreeBytes()
}

// capacityIs waits for the Node's annotations, which the plugin keeps from lvmd-agent's Watch,
// to say want bytes for the class and for the default class (00default).
func (c *topolvmCheck) capacityIs(t *testing.T, what string, want uint64) {
	t.Helper()
	var got map[string]string
	if err := eventually(time.Minute, 200*time.Millisecond, func() error {
		node, err := c.k.cluster.Client.CoreV1().Nodes().Get(c.k.ctx, c.k.cluster.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got = node.Annotations
		for _, key := range []string{c.capacityPrefix() + topolvmClass, c.capacityPrefix() + "00default"} {
			if got[key] != strconv.FormatUint(want, 10) {
				return fmt.Errorf("%s is %q", key, got[key])
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("%s: the Node's TopoLVM %s capacity is not lvmd-agent's free space %d: %v (annotations %v)", what, c.p.group, want, err, got)
	}
}

func (c *topolvmCheck) capacityPrefix() string { return "capacity." + c.p.group + "/" }

// create makes a LogicalVolume named name on the node in the class with spec's other fields
// (size, and source and accessType for a snapshot) and returns its UID, the LV's name.
func (c *topolvmCheck) create(t *testing.T, name string, spec map[string]any) string {
	t.Helper()
	spec["name"], spec["nodeName"], spec["deviceClass"] = name, c.k.cluster.NodeName, topolvmClass
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": c.p.group + "/v1", "kind": "LogicalVolume",
		"metadata": map[string]any{"name": name},
		"spec":     spec,
	}}
	created, err := c.lvs.Create(c.k.ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create LogicalVolume %s: %v", name, err)
	}
	return string(created.GetUID())
}

// status waits until f accepts the object's status and returns it.
func (c *topolvmCheck) status(t *testing.T, what, name string, f func(status map[string]any) error) map[string]any {
	t.Helper()
	var last map[string]any
	if err := eventually(time.Minute, 200*time.Millisecond, func() error {
		got, err := c.lvs.Get(c.k.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		last, _, _ = unstructured.NestedMap(got.Object, "status")
		return f(last)
	}); err != nil {
		t.Fatalf("%s: LogicalVolume %s: %v (status %v)", what, name, err, last)
	}
	return last
}

// statusIs waits for the plugin's answer in status: volumeID the LV's name (the object's UID)
// and currentSize size bytes.
func (c *topolvmCheck) statusIs(t *testing.T, what, name, uid string, size int64) {
	t.Helper()
	c.status(t, what, name, func(status map[string]any) error {
		id, _, _ := unstructured.NestedString(status, "volumeID")
		current, _, _ := unstructured.NestedString(status, "currentSize")
		q, err := resource.ParseQuantity(current)
		if id != uid || err != nil || q.Value() != size {
			return fmt.Errorf("want volumeID %s and currentSize %d bytes", uid, size)
		}
		return nil
	})
}

// lvIs checks the LV as lvmd-agent lists it through the gateway and as lvs sees it on the
// node: size bytes, or gone when size is 0.
func (c *topolvmCheck) lvIs(t *testing.T, what, uid string, size int64) {
	t.Helper()
	list, err := c.vg.GetLVList(withToken(callCtx(t), c.token), &lvmdpb.GetLVListRequest{DeviceClass: topolvmClass})
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
	case size == 0 && found != nil:
		t.Errorf("%s: lvmd-agent still lists LV %s: %v", what, uid, found)
	// size_gb is what the fork's clients (v0.11) read: whole GiB, rounded down.
	case size != 0 && (found == nil || found.GetSizeBytes() != size || found.GetSizeGb() != uint64(size>>30)):
		t.Errorf("%s: lvmd-agent lists %v, want LV %s of %d bytes", what, found, uid, size)
	}
	// lvs's standard output alone: it warns on standard error where device-mapper is
	// missing (lvmd-agent then keeps LVs in LVM's metadata only).
	out, err := exec.CommandContext(c.k.ctx, "lvs", "--noheadings", "--units", "b", "--nosuffix", "-o", "lv_size", topolvmVG+"/"+uid).Output()
	switch {
	case size == 0 && err == nil:
		t.Errorf("%s: lvs on the node still shows %s/%s: %s", what, topolvmVG, uid, out)
	case size != 0 && (err != nil || strings.TrimSpace(string(out)) != strconv.FormatInt(size, 10)):
		t.Errorf("%s: lvs %s/%s on the node: %q, %v; want %d bytes", what, topolvmVG, uid, out, err, size)
	}
}

// resize sets the object's spec.size.
func (c *topolvmCheck) resize(t *testing.T, name, size string) {
	t.Helper()
	patch := []byte(`{"spec":{"size":"` + size + `"}}`)
	if _, err := c.lvs.Patch(c.k.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("resize LogicalVolume %s to %s: %v", name, size, err)
	}
}

// delete deletes the object and waits until it is gone: the plugin removes the LV
// (RemoveLV), then its finalizer.
func (c *topolvmCheck) delete(t *testing.T, name string) {
	t.Helper()
	if err := c.lvs.Delete(c.k.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete LogicalVolume %s: %v", name, err)
	}
	if err := eventually(time.Minute, 200*time.Millisecond, func() error {
		if _, err := c.lvs.Get(c.k.ctx, name, metav1.GetOptions{}); err == nil {
			return fmt.Errorf("still there")
		}
		return nil
	}); err != nil {
		t.Fatalf("deleted LogicalVolume %s: %v", name, err)
	}
}

// logFailure logs the plugin's last lines when t failed: what it asked lvmd-agent and heard.
func (c *topolvmCheck) logFailure(t *testing.T) {
	if t.Failed() {
		logs, _ := c.k.try("-n", c.p.namespace, "logs", "daemonset/topolvm-node", "--tail=40")
		t.Logf("%s's log:\n%s", c.p.program, logs)
	}
}

// remove takes the plugin's manifest and CRD away again and leaves the Node without the
// plugin's finalizer and annotations, as it was (topolvm-controller, not run here, would clean
// up after the Node).
func (c *topolvmCheck) remove(t *testing.T) {
	k := c.k
	if out, err := k.try("delete", "--ignore-not-found", "--wait", "--timeout=2m", "-f", c.p.manifest); err != nil {
		t.Errorf("delete %s: %v\n%s", c.p.manifest, err, out)
	}
	if out, err := k.try("delete", "--ignore-not-found", "--timeout=2m", "crd", "logicalvolumes."+c.p.group); err != nil {
		t.Errorf("delete the LogicalVolume CRD: %v\n%s", err, out)
	}
	nodes := k.cluster.Client.CoreV1().Nodes()
	node, err := nodes.Get(k.ctx, k.cluster.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	for key := range node.Annotations {
		if strings.HasPrefix(key, c.capacityPrefix()) {
			delete(node.Annotations, key)
		}
	}
	var finalizers []string
	for _, f := range node.Finalizers {
		if f != c.p.group+"/node" {
			finalizers = append(finalizers, f)
		}
	}
	node.Finalizers = finalizers
	if _, err := nodes.Update(k.ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Errorf("the Node without TopoLVM's finalizer and annotations: %v", err)
	}
}
