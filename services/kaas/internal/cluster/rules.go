package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// Limits on what one request or cluster may hold; each bounds work and storage a client can
// cause.
const (
	MaxPools        = 32  // node pools per cluster, the control plane included
	MaxLabels       = 32  // labels per pool
	maxLabelNameLen = 317 // a DNS subdomain prefix (253), "/" and a name (63)
	maxLabelValue   = 63
)

// LabelPrefix starts the labels kaas itself puts on every node; clients may not set them.
const LabelPrefix = "kaas.plinth.dev/"

// ControlPlaneSizes are the control-plane sizes that keep etcd's quorum odd.
var ControlPlaneSizes = []int{1, 3, 5}

// Rules are the configurable limits requests are checked against.
type Rules struct {
	Catalog Catalog
	// InstanceTypes are the machine types pools may ask for; the first is the default.
	InstanceTypes []string
	// MaxPoolSize bounds every worker pool's machine count.
	MaxPoolSize int
	// FailAfter is how many failed reconciler passes in a row (an unreachable provider)
	// show in the status (see Derive); 0: never.
	FailAfter int
	// Quota bounds what one user's clusters may hold.
	Quota Quota
}

// Validate reports a misconfiguration.
func (r Rules) Validate() error {
	if len(r.Catalog.versions) == 0 {
		return fmt.Errorf("the version catalog is empty")
	}
	if len(r.InstanceTypes) == 0 {
		return fmt.Errorf("no instance types configured")
	}
	for _, t := range r.InstanceTypes {
		if len(validation.IsDNS1123Label(t)) > 0 {
			return fmt.Errorf("instance type %q must be a DNS-1123 label (it becomes a MAAS tag and a label value)", t)
		}
	}
	if r.MaxPoolSize < 1 {
		return fmt.Errorf("the maximum pool size must be at least 1")
	}
	return r.Quota.Validate()
}

// PoolSpec is a node pool as a request describes it.
type PoolSpec struct {
	Name         string
	InstanceType string
	Count        int
	Labels       []Label
}

// CreateSpec is a CreateCluster request.
type CreateSpec struct {
	Name         string
	Version      string
	ControlPlane PoolSpec // Name is ignored
	Workers      []PoolSpec
}

// ValidName checks a cluster or pool name: a DNS-1123 label, as Kubernetes object names,
// hostnames and MAAS tags need.
func ValidName(field, name string) error {
	if err := input.Required(field, name, validation.DNS1123LabelMaxLength); err != nil {
		return err
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return input.Invalid(field, "%s is not a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit", input.Quote(name))
	}
	return nil
}

// Create checks a CreateCluster request and returns the cluster's pools (control plane
// first) and its version. Every error names the request field at fault.
func (r Rules) Create(s CreateSpec) ([]Pool, Version, error) {
	if err := ValidName("name", s.Name); err != nil {
		return nil, Version{}, err
	}
	v, err := r.Version("k8s_version", s.Version)
	if err != nil {
		return nil, Version{}, err
	}
	if !slices.Contains(ControlPlaneSizes, s.ControlPlane.Count) {
		return nil, Version{}, input.Invalid("control_plane_nodes.count", "is %d; a control plane has 1, 3 or 5 machines", s.ControlPlane.Count)
	}
	cp := s.ControlPlane
	cp.Name = ControlPlanePool
	cpPool, err := r.pool("control_plane_nodes", cp, RoleControlPlane)
	if err != nil {
		return nil, Version{}, err
	}
	workers, err := r.WorkerPools("worker_node_pools", s.Workers, nil)
	if err != nil {
		return nil, Version{}, err
	}
	return append([]Pool{cpPool}, workers...), v, nil
}

// WorkerPools checks worker pools of a request (field names them); existing are the pool
// names the cluster has already, which new pools may not repeat (that is the caller's
// AlreadyExists; here only duplicates within the request are refused).
func (r Rules) WorkerPools(field string, specs []PoolSpec, existing []string) ([]Pool, error) {
	if len(specs)+len(existing) > MaxPools-1 && len(specs) > 0 {
		return nil, input.Invalid(field, "has %d pools; a cluster has at most %d worker pools", len(specs)+len(existing), MaxPools-1)
	}
	pools := make([]Pool, 0, len(specs))
	seen := map[string]bool{}
	for i, s := range specs {
		f := field + "[" + strconv.Itoa(i) + "]"
		if err := ValidName(f+".name", s.Name); err != nil {
			return nil, err
		}
		if s.Name == ControlPlanePool {
			return nil, input.Invalid(f+".name", "%q is reserved for the control plane", ControlPlanePool)
		}
		if seen[s.Name] {
			return nil, input.Invalid(f+".name", "%q is used twice in this request", s.Name)
		}
		seen[s.Name] = true
		if err := r.PoolCount(f+".count", s.Count); err != nil {
			return nil, err
		}
		p, err := r.pool(f, s, RoleWorker)
		if err != nil {
			return nil, err
		}
		pools = append(pools, p)
	}
	return pools, nil
}

// PoolCount checks a worker pool's machine count.
func (r Rules) PoolCount(field string, n int) error {
	if n < 0 || n > r.MaxPoolSize {
		return input.Invalid(field, "is %d; a pool has 0 to %d machines", n, r.MaxPoolSize)
	}
	return nil
}

func (r Rules) pool(field string, s PoolSpec, role Role) (Pool, error) {
	it := s.InstanceType
	if err := input.String(field+".instanceType", it, input.MaxName); err != nil {
		return Pool{}, err
	}
	if it == "" {
		it = r.InstanceTypes[0]
	}
	if !slices.Contains(r.InstanceTypes, it) {
		return Pool{}, input.Invalid(field+".instanceType", "%s is not offered; choose one of %s", input.Quote(it), strings.Join(r.InstanceTypes, ", "))
	}
	labels, err := checkLabels(field+".labels", s.Labels)
	if err != nil {
		return Pool{}, err
	}
	return Pool{Name: s.Name, Role: role, InstanceType: it, Count: s.Count, Labels: labels, NextOrdinal: 1}, nil
}

func checkLabels(field string, labels []Label) ([]Label, error) {
	if len(labels) > MaxLabels {
		return nil, input.Invalid(field, "has %d labels; at most %d are allowed", len(labels), MaxLabels)
	}
	seen := map[string]bool{}
	out := make([]Label, 0, len(labels))
	for i, l := range labels {
		f := field + "[" + strconv.Itoa(i) + "]"
		if err := input.Required(f+".name", l.Name, maxLabelNameLen); err != nil {
			return nil, err
		}
		if err := input.String(f+".value", l.Value, maxLabelValue); err != nil {
			return nil, err
		}
		if errs := validation.IsQualifiedName(l.Name); len(errs) > 0 {
			return nil, input.Invalid(f+".name", "%s is not a Kubernetes label name ([prefix/]name: name up to 63 letters, digits, '-', '_', '.', starting and ending alphanumeric)", input.Quote(l.Name))
		}
		if reservedLabel(l.Name) {
			return nil, input.Invalid(f+".name", "%s is reserved (kaas sets %s* labels; Kubernetes owns kubernetes.io and k8s.io)", input.Quote(l.Name), LabelPrefix)
		}
		if errs := validation.IsValidLabelValue(l.Value); len(errs) > 0 {
			return nil, input.Invalid(f+".value", "%s is not a Kubernetes label value (up to 63 letters, digits, '-', '_', '.', starting and ending alphanumeric)", input.Quote(l.Value))
		}
		if seen[l.Name] {
			return nil, input.Invalid(f+".name", "%q is given twice", l.Name)
		}
		seen[l.Name] = true
		out = append(out, l)
	}
	return out, nil
}

// reservedLabel: kaas's own labels, and Kubernetes' namespaces, most of which a node may not
// set on itself.
func reservedLabel(name string) bool {
	prefix, _, found := strings.Cut(name, "/")
	if !found {
		return false
	}
	return prefix+"/" == LabelPrefix || prefix == "kubernetes.io" || prefix == "k8s.io" ||
		strings.HasSuffix(prefix, ".kubernetes.io") || strings.HasSuffix(prefix, ".k8s.io")
}

// Version resolves a requested version against the catalog: empty means the default.
func (r Rules) Version(field, s string) (Version, error) {
	if err := input.String(field, s, 32); err != nil {
		return Version{}, err
	}
	if s == "" {
		return r.Catalog.Default(), nil
	}
	v, err := ParseVersion(s)
	if err != nil {
		return Version{}, input.Invalid(field, "%s: %v", input.Quote(s), err)
	}
	if !r.Catalog.Contains(v) {
		return Version{}, input.Invalid(field, "%s is not supported; supported versions: %s", v, r.Catalog)
	}
	return v, nil
}
