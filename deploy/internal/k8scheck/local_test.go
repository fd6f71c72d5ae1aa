package k8scheck

import (
	"errors"
	"slices"
	"testing"
)

const localOverlay = "../../k8s/overlays/local"

// overlays/local (make kube-up's) passes the checks the base passes, but for the Envoy
// contract (the Go gateway replaces Envoy there), and runs PostgreSQL and NATS besides.
func TestLocalOverlay(t *testing.T) {
	objs := build(t, localOverlay)
	s := decode(t, objs)
	for name, errs := range map[string][]error{
		"services":   CheckServices(s),
		"budgets":    CheckBudgets(s),
		"containers": CheckContainers(s),
		"references": CheckReferences(s, documented(t)),
	} {
		if err := errors.Join(errs...); err != nil {
			t.Errorf("%s:\n%v", name, err)
		}
	}
	var names []string
	for _, w := range s.Workloads {
		names = append(names, w.GetName())
	}
	for _, want := range []string{"auth", "stats", "kaas", "vagrant-server", "vagrant-runner", "lvmd-agent", "cnpgi-plugin", "gateway", "postgres", "nats"} {
		if !slices.Contains(names, want) {
			t.Errorf("no workload %s in %v", want, names)
		}
	}
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "envoy-config" {
			t.Error("envoy-config is still in the build: nothing reads it")
		}
	}
}
