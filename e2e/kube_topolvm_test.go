package e2e

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/plinth-dev/plinth/libs/kubetest"
	"github.com/plinth-dev/plinth/libs/kubetest/kubelocal"
)

// topolvmNodePlugin is one version of TopoLVM's node plugin that the kube suite runs as a
// DaemonSet beside lvmd-agent's, talking lvmd to it over the node's /run/topolvm/lvmd.sock.
type topolvmNodePlugin struct {
	// program is in bin/ (make tools-k8s builds it from the version its tools module pins);
	// image is what the test makes around it; manifest (in testdata) runs it in namespace.
	program, image, manifest, namespace string
	// group is the API group of its LogicalVolume, and what its Node annotations
	// (capacity.<group>/<class>) and finalizer (<group>/node) are named after.
	group string
	// crds are its LogicalVolume CRD, from its own module.
	crds func(testing.TB) []*apiextensionsv1.CustomResourceDefinition
}

var (
	// topolvm011 speaks the fork's lvmd wire (sizes in GiB) in the legacy group.
	topolvm011 = topolvmNodePlugin{
		program: "topolvm-node", image: "plinth.local/topolvm-node:v0.11.1", manifest: "e2e/testdata/topolvm-node.yaml",
		namespace: "topolvm-system", group: "topolvm.cybozu.com", crds: kubetest.TopoLVMCRDs,
	}
	// topolvm041 speaks today's (sizes in bytes, CreateLVSnapshot) in topolvm.io, its
	// default, so the two never reconcile each other's objects.
	topolvm041 = topolvmNodePlugin{
		program: "topolvm-node-v0.41", image: "plinth.local/topolvm-node:v0.41.0", manifest: "e2e/testdata/topolvm041-node.yaml",
		namespace: "topolvm041-system", group: "topolvm.io", crds: kubetest.TopoLVM041CRDs,
	}
)

// checkTopoLVMNodePlugin: TopoLVM's own node plugin v0.11.1 (from its Go module) against
// lvmd-agent's DaemonSet. The Node gets the capacity annotations from lvmd's Watch (what
// lvmd-agent reports through the gateway); a LogicalVolume object becomes an LV named by its
// UID (CreateLV), seen through the gateway and by lvs on the node; a larger spec.size resizes
// it (ResizeLV); deleting the object removes the LV (RemoveLV) and the capacity comes back.
func (k *kubeStack) checkTopoLVMNodePlugin(t *testing.T) {
	c := k.startTopoLVM(t, topolvm011)
	free := c.freeBytes(t)
	c.capacityIs(t, "at start", free)

	name := "e2e-" + randomHex(t, 4)
	uid := c.create(t, name, map[string]any{"size": "1Gi"})
	c.statusIs(t, "created", name, uid, 1<<30)
	c.lvIs(t, "created", uid, 1<<30)
	c.capacityIs(t, "after the 1 GiB volume", free-1<<30)

	c.resize(t, name, "2Gi")
	c.statusIs(t, "resized", name, uid, 2<<30)
	c.lvIs(t, "resized", uid, 2<<30)
	c.capacityIs(t, "after the resize to 2 GiB", free-2<<30)

	c.delete(t, name)
	c.lvIs(t, "deleted", uid, 0)
	c.capacityIs(t, "after the delete", free)
}

// startTopoLVM runs p on the cluster: its image imported, its CRD created, its manifest
// applied and rolled out; everything goes again when t ends (topolvmCheck.remove).
func (k *kubeStack) startTopoLVM(t *testing.T, p topolvmNodePlugin) *topolvmCheck {
	t.Helper()
	ctx := k.ctx
	// At the path upstream's image and chart run it from (/topolvm-node).
	program := kubelocal.ProgramPath(kubetest.Binary(t, p.program), "/topolvm-node")
	if err := k.cluster.ImportProgram(ctx, p.image, program); err != nil {
		t.Fatal(err)
	}
	crdCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := kubetest.CreateCRDs(crdCtx, k.cluster.Config, p.crds(t)...); err != nil {
		t.Fatal(err)
	}
	c := newTopoLVMCheck(t, k, p)
	t.Cleanup(func() { c.remove(t) })
	k.run(t, "apply", "-f", p.manifest)
	if out, err := k.try("-n", p.namespace, "rollout", "status", "daemonset/topolvm-node", "--timeout=3m"); err != nil {
		logs, _ := k.try("-n", p.namespace, "logs", "daemonset/topolvm-node", "--tail=50")
		pods, _ := k.try("-n", p.namespace, "describe", "pods")
		t.Fatalf("%s did not roll out: %v\n%s\nlogs:\n%s\npods:\n%s", p.manifest, err, out, logs, pods)
	}
	t.Cleanup(func() { c.logFailure(t) })
	return c
}
