package kube

import (
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// Deployment is a Deployment's line in GetClusterResources: READY when every replica is ready
// (upstream's rule: ready ≥ status replicas), else NOT_READY; replicas are the spec's (upstream
// left them unset) and reliability says whether a replica may fail.
func Deployment(d *appsv1.Deployment) cluster.Resource {
	wanted := int32(1)
	if d.Spec.Replicas != nil {
		wanted = *d.Spec.Replicas
	}
	status := cluster.StatusNotReady
	if d.Status.ReadyReplicas >= d.Status.Replicas {
		status = cluster.StatusReady
	}
	// The typed client drops apiVersion and kind (client-go#541): set as upstream did.
	return cluster.Resource{APIVersion: "apps/v1", Kind: "Deployment", Namespace: safe(d.Namespace), Name: safe(d.Name),
		Status: status, Replicas: wanted, Reliability: cluster.DeploymentReliability(wanted, d.Status.ReadyReplicas)}
}

// Role labels: node-role.kubernetes.io/<role> (the role is in the key; upstream read the
// values, which are empty) and the older kubernetes.io/role=<role>, as kubectl reads them.
const (
	roleLabelPrefix = "node-role.kubernetes.io/"
	legacyRoleLabel = "kubernetes.io/role"
)

// Node is a node as upstream maps it — READY or NOT_READY by its Ready condition (UNKNOWN
// without one), internal and external address — with its roles from the label keys and its
// age from its creation.
func Node(n *corev1.Node) cluster.Node {
	out := cluster.Node{Name: safe(n.Name), Status: cluster.StatusUnknown, Since: n.CreationTimestamp.Time}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status = cluster.StatusNotReady
			if c.Status == corev1.ConditionTrue {
				out.Status = cluster.StatusReady
			}
			break
		}
	}
	for _, a := range n.Status.Addresses {
		switch a.Type {
		case corev1.NodeExternalIP, corev1.NodeExternalDNS:
			out.ExternalIP = cluster.SafeText(a.Address, input.MaxName)
		case corev1.NodeInternalIP, corev1.NodeInternalDNS:
			out.InternalIP = cluster.SafeText(a.Address, input.MaxName)
		}
	}
	roles := map[string]bool{}
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, roleLabelPrefix) && len(k) > len(roleLabelPrefix):
			roles[safe(strings.TrimPrefix(k, roleLabelPrefix))] = true
		case k == legacyRoleLabel && v != "":
			roles[safe(v)] = true
		}
	}
	out.Roles = make([]string, 0, len(roles))
	for r := range roles {
		out.Roles = append(out.Roles, r)
	}
	sort.Strings(out.Roles)
	return out
}

// rookMons are the monitors' ids as Rook labels their deployments (app=rook-ceph-mon,
// mon=<id>): Rook's CephCluster status does not name them.
func rookMons(deployments []*appsv1.Deployment) []string {
	var ids []string
	for _, d := range deployments {
		if d.Labels["app"] == "rook-ceph-mon" && d.Labels["mon"] != "" {
			ids = append(ids, safe(d.Labels["mon"]))
		}
	}
	sort.Strings(ids)
	return ids
}
