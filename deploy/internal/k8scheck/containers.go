package k8scheck

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

func isNotBuiltIn(err error) bool { return errors.Is(err, ErrNotBuiltIn) }

// CheckContainers checks every container of every workload: a readiness and a liveness probe
// (init containers run to completion and have none), CPU and memory requests (the scheduler
// places pods by them), and an image pinned to a version — a tag that is not "latest" or
// "<something>-latest", or a digest. A floating tag makes two nodes run different code.
func CheckContainers(s *Set) []error {
	var errs []error
	for _, w := range s.Workloads {
		spec := w.Template.Spec
		for i, c := range spec.InitContainers {
			path := fmt.Sprintf("%s: initContainers[%d] %q", w, i, c.Name)
			errs = append(errs, checkRequests(path, c)...)
			if err := CheckImage(c.Image); err != nil {
				errs = append(errs, fmt.Errorf("%s: image: %w", path, err))
			}
		}
		for i, c := range spec.Containers {
			path := fmt.Sprintf("%s: containers[%d] %q", w, i, c.Name)
			if c.ReadinessProbe == nil {
				errs = append(errs, fmt.Errorf("%s: no readinessProbe", path))
			}
			if c.LivenessProbe == nil {
				errs = append(errs, fmt.Errorf("%s: no livenessProbe", path))
			}
			errs = append(errs, checkRequests(path, c)...)
			if err := CheckImage(c.Image); err != nil {
				errs = append(errs, fmt.Errorf("%s: image: %w", path, err))
			}
		}
	}
	return errs
}

func checkRequests(path string, c corev1.Container) []error {
	var errs []error
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
			errs = append(errs, fmt.Errorf("%s: resources.requests.%s is not set", path, r))
		}
	}
	return errs
}

// CheckImage refuses an image reference that does not pin a version: no tag (which means
// "latest"), the tag "latest", or a floating "<series>-latest" tag. A digest pins it.
func CheckImage(ref string) error {
	if ref == "" {
		return errors.New("empty")
	}
	if _, digest, ok := strings.Cut(ref, "@"); ok {
		if !strings.Contains(digest, ":") {
			return fmt.Errorf("%q: digest %q is not algorithm:hex", ref, digest)
		}
		return nil
	}
	// The tag follows the last ":" after the last "/" (a registry may have a :port).
	name := ref[strings.LastIndex(ref, "/")+1:]
	_, tag, ok := strings.Cut(name, ":")
	switch {
	case !ok || tag == "":
		return fmt.Errorf("%q has no tag (it would run :latest); pin a version", ref)
	case tag == "latest" || strings.HasSuffix(tag, "-latest"):
		return fmt.Errorf("%q uses the floating tag %q; pin a version", ref, tag)
	}
	return nil
}

// CheckRunnerSandbox: every vagrant-runner container says how its netns machines are kept
// apart. Its default, a runc container per machine, needs runc, a writable /run and cgroups
// that no pod here has; a runner left on the default fails every `up` ("runc state
// directory: … read-only file system"), as kaas's machines container once did.
func CheckRunnerSandbox(s *Set) []error {
	var errs []error
	for _, w := range s.Workloads {
		for i, c := range w.Template.Spec.Containers {
			if !strings.Contains(c.Image, "/vagrant-runner:") {
				continue
			}
			set := false
			for _, e := range c.Env {
				set = set || e.Name == "PLINTH_VAGRANT_NETNS_SANDBOX"
			}
			if !set {
				errs = append(errs, fmt.Errorf("%s: containers[%d] %q: PLINTH_VAGRANT_NETNS_SANDBOX is not set (the default, runc, cannot work in this pod)", w, i, c.Name))
			}
		}
	}
	return errs
}
