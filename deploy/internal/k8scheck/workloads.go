package k8scheck

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// Workload is an object that runs pods, with the pod template it runs.
type Workload struct {
	Object
	Template corev1.PodTemplateSpec
}

// Set is every object of a build, with the built-in ones decoded.
type Set struct {
	Objects   []Object
	Workloads []Workload
	Services  []Service
	Budgets   []Budget
}

// Budget is a PodDisruptionBudget of the build.
type Budget struct {
	Object
	Spec policyv1.PodDisruptionBudget
}

// Service is a Service of the build.
type Service struct {
	Object
	Spec corev1.Service
}

// Decode types every built-in object strictly (see Typed) and sorts out workloads and
// Services. Custom resources are kept as they are; errors name each object that failed.
func Decode(objs []Object) (*Set, []error) {
	s := &Set{Objects: objs}
	var errs []error
	for _, o := range objs {
		t, err := Typed(o)
		if err != nil {
			if !isNotBuiltIn(err) {
				errs = append(errs, err)
			}
			continue
		}
		switch v := t.(type) {
		case *appsv1.Deployment:
			s.Workloads = append(s.Workloads, Workload{o, v.Spec.Template})
		case *appsv1.DaemonSet:
			s.Workloads = append(s.Workloads, Workload{o, v.Spec.Template})
		case *appsv1.StatefulSet:
			s.Workloads = append(s.Workloads, Workload{o, v.Spec.Template})
		case *batchv1.Job:
			s.Workloads = append(s.Workloads, Workload{o, v.Spec.Template})
		case *batchv1.CronJob:
			s.Workloads = append(s.Workloads, Workload{o, v.Spec.JobTemplate.Spec.Template})
		case *corev1.Pod:
			s.Workloads = append(s.Workloads, Workload{o, corev1.PodTemplateSpec{ObjectMeta: v.ObjectMeta, Spec: v.Spec}})
		case *corev1.Service:
			s.Services = append(s.Services, Service{o, *v})
		case *policyv1.PodDisruptionBudget:
			s.Budgets = append(s.Budgets, Budget{o, *v})
		}
	}
	return s, errs
}

// Workload returns the workload of that kind and name, or an error naming it.
func (s *Set) Workload(kind, name string) (Workload, error) {
	for _, w := range s.Workloads {
		if w.GetKind() == kind && w.GetName() == name {
			return w, nil
		}
	}
	return Workload{}, fmt.Errorf("no %s %q in the build", kind, name)
}

// Service returns the Service of that name, or an error naming it.
func (s *Set) Service(name string) (Service, error) {
	for _, svc := range s.Services {
		if svc.GetName() == name {
			return svc, nil
		}
	}
	return Service{}, fmt.Errorf("no Service %q in the build", name)
}
