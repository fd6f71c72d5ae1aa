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
