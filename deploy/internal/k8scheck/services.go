package k8scheck

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// CheckServices checks that every Service with a selector selects the pods of at least one
// workload in its namespace, and that each of its ports' targetPort is a port those pods'
// containers declare (by name or number). A Service without a selector (ExternalName, or
// endpoints managed by hand) is reported too: nothing in Plinth needs one.
func CheckServices(s *Set) []error {
	var errs []error
	for _, svc := range s.Services {
		spec := svc.Spec.Spec
		if len(spec.Selector) == 0 {
			errs = append(errs, fmt.Errorf("%s: spec.selector is empty: the Service selects no pods", svc))
			continue
		}
		sel := labels.SelectorFromSet(spec.Selector)
		var selected []Workload
		for _, w := range s.Workloads {
			if w.GetNamespace() == svc.GetNamespace() && sel.Matches(labels.Set(w.Template.Labels)) {
				selected = append(selected, w)
			}
		}
		if len(selected) == 0 {
			errs = append(errs, fmt.Errorf("%s: spec.selector %v matches the pod labels of no workload in namespace %q", svc, spec.Selector, svc.GetNamespace()))
			continue
		}
		for i, p := range spec.Ports {
			target := p.TargetPort
			if target.Type == intstr.Int && target.IntVal == 0 {
				target = intstr.FromInt32(p.Port) // an unset targetPort is the port itself
			}
			for _, w := range selected {
				if !declaresPort(w.Template.Spec, target, p.Protocol) {
					errs = append(errs, fmt.Errorf("%s: spec.ports[%d] (%s) targets port %s, which no container of %s declares", svc, i, p.Name, target.String(), w))
				}
			}
		}
	}
	return errs
}

// CheckBudgets checks that every PodDisruptionBudget selects the pods of a workload in its
// namespace: a budget that selects nothing protects nothing, silently.
func CheckBudgets(s *Set) []error {
	var errs []error
	for _, b := range s.Budgets {
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Spec.Selector)
		if err != nil || sel.Empty() {
			errs = append(errs, fmt.Errorf("%s: spec.selector selects nothing or everything (%v)", b, err))
			continue
		}
		if !slices.ContainsFunc(s.Workloads, func(w Workload) bool {
			return w.GetNamespace() == b.GetNamespace() && sel.Matches(labels.Set(w.Template.Labels))
		}) {
			errs = append(errs, fmt.Errorf("%s: spec.selector %s matches the pod labels of no workload in namespace %q", b, sel, b.GetNamespace()))
		}
	}
	return errs
}

func declaresPort(spec corev1.PodSpec, target intstr.IntOrString, protocol corev1.Protocol) bool {
	if protocol == "" {
		protocol = corev1.ProtocolTCP
	}
	for _, c := range spec.Containers {
		for _, cp := range c.Ports {
			proto := cp.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			if proto != protocol {
				continue
			}
			if target.Type == intstr.String && cp.Name == target.StrVal {
				return true
			}
			if target.Type == intstr.Int && cp.ContainerPort == target.IntVal {
				return true
			}
		}
	}
	return false
}
