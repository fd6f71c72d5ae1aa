package cluster

// NodeLabels are the labels machine m's Kubernetes node carries: its pool's labels and
// kaas's own (cluster, pool, instance type, role), which clients may not override.
func NodeLabels(c Cluster, p Pool, m Machine) map[string]string {
	out := make(map[string]string, len(p.Labels)+4)
	for _, l := range p.Labels {
		out[l.Name] = l.Value
	}
	out[LabelPrefix+"cluster"] = c.Name
	out[LabelPrefix+"pool"] = p.Name
	out[LabelPrefix+"instance-type"] = p.InstanceType
	out[LabelPrefix+"role"] = m.Role.String()
	return out
}

// NodeTaints keep ordinary workloads off control-plane nodes, as kubeadm does.
func NodeTaints(m Machine) []string {
	if m.Role == RoleControlPlane {
		return []string{"node-role.kubernetes.io/control-plane=:NoSchedule"}
	}
	return nil
}
