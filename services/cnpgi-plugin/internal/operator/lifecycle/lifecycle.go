package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/operator/jsonpatch"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// Operation is what the operator is about to do with the object.
type Operation int

const (
	// OperationOther is any operation the plugin does not change objects for.
	OperationOther Operation = iota
	// OperationCreate: the operator creates the object.
	OperationCreate
	// OperationEvaluate: the operator builds the Pod it would create, to compare it with the
	// running one; the sidecar must be part of it, or every Pod would look outdated.
	OperationEvaluate
)

// recoveryJobs are the CloudNativePG job roles that restore a cluster from a recovery
// source: the plugin's socket must be there for RestoreJobHooks and WAL restore.
var recoveryJobs = []string{"full-recovery", "snapshot-recovery"}

// Injector decides where the sidecar goes and writes the patches.
type Injector struct {
	sidecar Sidecar
}

// NewInjector checks s and returns an Injector.
func NewInjector(s Sidecar) (*Injector, error) {
	if s.Image == "" || s.PluginName == "" {
		return nil, errors.New("lifecycle: the sidecar needs an image and the plugin name")
	}
	return &Injector{sidecar: s}, nil
}

// Hook returns the JSON patch that adds (or updates) the sidecar in object, the Kubernetes
// object the operator is about to create or evaluate for clusterDef's Cluster; empty when the
// object needs nothing. The patch leaves apiVersion and kind alone: the operator decodes the
// result as the same kind.
func (in *Injector) Hook(op Operation, clusterDef, objectDef []byte) (jsonpatch.Patch, error) {
	c, err := cluster.Parse(clusterDef)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(objectDef, &obj); err != nil || obj == nil {
		return nil, &input.Error{Field: "object_definition", Reason: "is not a Kubernetes object in JSON"}
	}
	if op != OperationCreate && op != OperationEvaluate {
		return nil, nil
	}
	kind, _ := obj["kind"].(string)
	switch {
	case kind == "Pod" && (in.usedBy(c) || (in.recoversWith(c) && c.Status.CurrentPrimary == "")):
		// A cluster that only recovers from the plugin's archive needs it until the
		// bootstrap is done (the instance manager sets currentPrimary then).
		spec, err := object(obj, "spec")
		if err != nil {
			return nil, err
		}
		return in.patchPodSpec([]string{"spec"}, spec, "postgres", c.Spec.ImagePullPolicy)
	case kind == "Job" && in.recoversWith(c):
		tmpl, err := object(obj, "spec", "template")
		if err != nil {
			return nil, err
		}
		role := jobRole(tmpl)
		if !slices.Contains(recoveryJobs, role) {
			return nil, nil
		}
		spec, err := object(tmpl, "spec")
		if err != nil {
			return nil, err
		}
		// CloudNativePG names a job's container after its role.
		return in.patchPodSpec([]string{"spec", "template", "spec"}, spec, role, c.Spec.ImagePullPolicy)
	}
	return nil, nil
}

// usedBy reports whether c enables the plugin in spec.plugins.
func (in *Injector) usedBy(c *cluster.Cluster) bool {
	_, err := c.ArchiveTarget(in.sidecar.PluginName)
	// Parameter problems still mean the plugin is used: the sidecar does not depend on them
	// (each call reads them), and leaving it out would only add a second failure.
	return !errors.Is(err, cluster.ErrPluginNotUsed)
}

// recoversWith reports whether c bootstraps by recovery from an external cluster served by
// the plugin.
func (in *Injector) recoversWith(c *cluster.Cluster) bool {
	b := c.Spec.Bootstrap
	if b == nil || b.Recovery == nil || b.Recovery.Source == "" {
		return false
	}
	for _, ec := range c.Spec.ExternalClusters {
		if ec.Name == b.Recovery.Source {
			return ec.Plugin != nil && ec.Plugin.Name == in.sidecar.PluginName
		}
	}
	return false
}

// jobRole reads CloudNativePG's <group>/jobRole label from a Job's pod template.
func jobRole(tmpl map[string]any) string {
	meta, _ := tmpl["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	for k, v := range labels {
		if strings.HasSuffix(k, "/jobRole") {
			s, _ := v.(string)
			return s
		}
	}
	return ""
}

// patchPodSpec adds the plugins volume (and the configuration's), mounts /plugins in the main
// container, and adds the sidecar with the main container's mounts, or replaces a sidecar of
// the same name that differs. A spec that already has all of it gets no operations.
func (in *Injector) patchPodSpec(base []string, spec map[string]any, mainName, pullPolicy string) (jsonpatch.Patch, error) {
	containers, _ := spec["containers"].([]any)
	main := slices.IndexFunc(containers, func(x any) bool { return nameOf(x) == mainName })
	if main < 0 {
		return nil, &input.Error{Field: "object_definition", Reason: fmt.Sprintf("has no container %q for the plugin's sidecar to join", mainName)}
	}
	mc, _ := containers[main].(map[string]any)
	var p jsonpatch.Patch
	ensure(&p, spec, base, "volumes", map[string]any{"name": PluginsVolume, "emptyDir": map[string]any{}}, false)
	if in.sidecar.ConfigMap != "" {
		vol := map[string]any{"name": ConfigVolume(in.sidecar.PluginName), "configMap": map[string]any{"name": in.sidecar.ConfigMap}}
		ensure(&p, spec, base, "volumes", vol, true)
	}
	mount := map[string]any{"name": PluginsVolume, "mountPath": PluginsMountPath}
	ensure(&p, mc, append(slices.Clone(base), "containers", strconv.Itoa(main)), "volumeMounts", mount, false)

	mounts, _ := mc["volumeMounts"].([]any)
	mounts = slices.Clone(mounts)
	if !slices.ContainsFunc(mounts, func(x any) bool { return nameOf(x) == PluginsVolume }) {
		mounts = append(mounts, mount)
	}
	sidecar, err := normalize(in.sidecar.container(pullPolicy, mounts))
	if err != nil {
		return nil, err
	}
	ensure(&p, spec, base, "initContainers", sidecar, true)
	return p, nil
}

// ensure makes obj[field], a list of named items under the JSON path base, hold item: added
// when no item has its name; replaced when one does and differs, if replace is set.
func ensure(p *jsonpatch.Patch, obj map[string]any, base []string, field string, item map[string]any, replace bool) {
	list, present := obj[field].([]any)
	for i, x := range list {
		if nameOf(x) != item["name"] {
			continue
		}
		if replace && !reflect.DeepEqual(x, item) {
			p.Replace(jsonpatch.Pointer(append(slices.Clone(base), field, strconv.Itoa(i))...), item)
		}
		return
	}
	if !present { // absent or null
		p.Add(jsonpatch.Pointer(append(slices.Clone(base), field)...), []any{item})
		return
	}
	p.Add(jsonpatch.Pointer(append(slices.Clone(base), field, "-")...), item)
}

// object walks obj down the given fields, each of which must be a JSON object.
func object(obj map[string]any, fields ...string) (map[string]any, error) {
	for i, f := range fields {
		next, ok := obj[f].(map[string]any)
		if !ok {
			return nil, &input.Error{Field: "object_definition", Reason: "has no " + strings.Join(fields[:i+1], ".")}
		}
		obj = next
	}
	return obj, nil
}

func nameOf(x any) string {
	m, _ := x.(map[string]any)
	s, _ := m["name"].(string)
	return s
}

// normalize turns a typed value into the generic JSON form the object was decoded into, so
// the two compare with reflect.DeepEqual.
func normalize(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("lifecycle: encode the sidecar: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("lifecycle: decode the sidecar: %w", err)
	}
	return m, nil
}
