package grpc

import (
	"context"
	"fmt"
	"log/slog"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
)

// maxRepeated bounds repeated request fields before anything else looks at them.
const maxRepeated = cluster.MaxPools

// ClusterServer implements cnct.kaas.api.Cluster: validate → cluster.Service → toStatus.
type ClusterServer struct {
	kaaspb.UnimplementedClusterServer
	svc *cluster.Service
	log *slog.Logger
}

// NewClusterServer serves svc.
func NewClusterServer(svc *cluster.Service, log *slog.Logger) *ClusterServer {
	return &ClusterServer{svc: svc, log: log}
}

// CreateCluster records the cluster, owned by the caller, and returns at once; the
// reconciler provisions it (status PROVISIONING until every machine is ready).
func (s *ClusterServer) CreateCluster(ctx context.Context, req *kaaspb.CreateClusterMsg) (*kaaspb.CreateClusterReply, error) {
	if len(req.GetWorkerNodePools()) > maxRepeated {
		return nil, input.Invalid("worker_node_pools", "has %d pools; at most %d are allowed", len(req.GetWorkerNodePools()), maxRepeated)
	}
	cp := req.GetControlPlaneNodes()
	spec := cluster.CreateSpec{Name: req.GetName(), Version: req.GetK8SVersion(),
		ControlPlane: cluster.PoolSpec{InstanceType: cp.GetInstanceType(), Count: int(cp.GetCount()), Labels: labels(cp.GetLabels())},
		Workers:      poolSpecs(req.GetWorkerNodePools())}
	if len(cp.GetLabels()) > cluster.MaxLabels {
		return nil, input.Invalid("control_plane_nodes.labels", "has %d labels; at most %d are allowed", len(cp.GetLabels()), cluster.MaxLabels)
	}
	v, err := s.svc.Create(ctx, spec, caller(ctx))
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "cluster", input.Quote(req.GetName()))
	}
	return &kaaspb.CreateClusterReply{Ok: true, Cluster: item(v.Cluster)}, nil
}

// GetCluster returns the cluster's status and, once its API endpoint is known, a kubeconfig
// for the caller: a certificate issued now, with what the caller's role may do there.
func (s *ClusterServer) GetCluster(ctx context.Context, req *kaaspb.GetClusterMsg) (*kaaspb.GetClusterReply, error) {
	c, kc, err := s.svc.Detail(ctx, req.GetName(), caller(ctx))
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "cluster", input.Quote(req.GetName()))
	}
	return &kaaspb.GetClusterReply{Ok: true, Cluster: &kaaspb.ClusterDetailItem{Name: c.Name, StatusMessage: c.StatusMessage,
		Kubeconfig: string(kc), Status: kaaspb.ClusterStatus(c.Status)}}, nil
}

// DeleteCluster starts deleting the cluster: status STOPPING until every machine is released,
// then it is gone. Deleting a cluster already being deleted is not an error.
func (s *ClusterServer) DeleteCluster(ctx context.Context, req *kaaspb.DeleteClusterMsg) (*kaaspb.DeleteClusterReply, error) {
	v, already, err := s.svc.Delete(ctx, req.GetName())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "cluster", input.Quote(req.GetName()))
	}
	msg := fmt.Sprintf("deleting cluster %s: releasing %d machine(s)", v.Name, len(v.Machines))
	if already {
		msg = fmt.Sprintf("cluster %s is already being deleted: %s", v.Name, v.StatusMessage)
	}
	return &kaaspb.DeleteClusterReply{Ok: true, Status: msg}, nil
}

// GetClusterList lists every cluster with its status.
func (s *ClusterServer) GetClusterList(ctx context.Context, _ *kaaspb.GetClusterListMsg) (*kaaspb.GetClusterListReply, error) {
	cs, err := s.svc.List(ctx)
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	out := &kaaspb.GetClusterListReply{Ok: true, Clusters: make([]*kaaspb.ClusterItem, 0, len(cs))}
	for _, c := range cs {
		out.Clusters = append(out.Clusters, item(c))
	}
	return out, nil
}

// GetClusterNodesStatus reports each machine: its provider's view (system id, hostname,
// status, address) and its node in the cluster's API ("unknown" when unreachable).
func (s *ClusterServer) GetClusterNodesStatus(ctx context.Context, req *kaaspb.GetClusterNodesStatusMsg) (*kaaspb.GetClusterNodesStatusReply, error) {
	v, nodes, err := s.svc.NodesStatus(ctx, req.GetClusterName())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "cluster", input.Quote(req.GetClusterName()))
	}
	out := &kaaspb.GetClusterNodesStatusReply{Name: v.Name, Count: int32(len(nodes))}
	for _, n := range nodes {
		ip := ""
		if len(n.Addresses) > 0 {
			ip = n.Addresses[0]
		}
		out.Machines = append(out.Machines, &kaaspb.GetClusterNodesStatusReply_MachineStatus{
			K8SNodeStatus: n.K8sStatus, K8SVersion: n.K8sVersion, MaasSystemId: n.ProviderID,
			MaasHostname: n.Hostname, MaasNodeStatus: n.ProviderStatus, MaasIPAddr: ip})
	}
	return out, nil
}

// GetVersionInformation reports how this kaas was built.
func (s *ClusterServer) GetVersionInformation(context.Context, *kaaspb.GetVersionMsg) (*kaaspb.GetVersionReply, error) {
	return &kaaspb.GetVersionReply{Ok: true, VersionInformation: versionInformation()}, nil
}

// AddNodePool adds worker pools, all or none.
func (s *ClusterServer) AddNodePool(ctx context.Context, req *kaaspb.AddNodePoolMsg) (*kaaspb.AddNodePoolReply, error) {
	if len(req.GetWorkerNodePools()) > maxRepeated {
		return nil, input.Invalid("worker_node_pools", "has %d pools; at most %d are allowed", len(req.GetWorkerNodePools()), maxRepeated)
	}
	if err := s.svc.AddPools(ctx, req.GetClusterName(), poolSpecs(req.GetWorkerNodePools())); err != nil {
		return nil, toStatus(ctx, s.log, err, "cluster", input.Quote(req.GetClusterName()))
	}
	return &kaaspb.AddNodePoolReply{Ok: true}, nil
}

// DeleteNodePool deletes worker pools: all of them, or none when one does not exist.
func (s *ClusterServer) DeleteNodePool(ctx context.Context, req *kaaspb.DeleteNodePoolMsg) (*kaaspb.DeleteNodePoolReply, error) {
	if err := s.svc.DeletePools(ctx, req.GetClusterName(), req.GetNodePoolNames()); err != nil {
		return nil, toStatus(ctx, s.log, err, "cluster", input.Quote(req.GetClusterName()))
	}
	return &kaaspb.DeleteNodePoolReply{Ok: true}, nil
}

// ScaleNodePool sets worker pools' machine counts; a scale-down releases failed machines
// first, then the newest.
func (s *ClusterServer) ScaleNodePool(ctx context.Context, req *kaaspb.ScaleNodePoolMsg) (*kaaspb.ScaleNodePoolReply, error) {
	if len(req.GetNodePools()) > maxRepeated {
		return nil, input.Invalid("node_pools", "has %d entries; at most %d are allowed", len(req.GetNodePools()), maxRepeated)
	}
	specs := make([]cluster.ScaleSpec, 0, len(req.GetNodePools()))
	for _, p := range req.GetNodePools() {
		specs = append(specs, cluster.ScaleSpec{Name: p.GetName(), Count: int(p.GetCount())})
	}
	if err := s.svc.Scale(ctx, req.GetClusterName(), specs); err != nil {
		return nil, toStatus(ctx, s.log, err, "cluster", input.Quote(req.GetClusterName()))
	}
	return &kaaspb.ScaleNodePoolReply{Ok: true}, nil
}

// GetUpgradeClusterInformation lists the catalog versions the cluster may move to now;
// ok is true when there is any.
func (s *ClusterServer) GetUpgradeClusterInformation(ctx context.Context, req *kaaspb.GetUpgradeClusterInformationMsg) (*kaaspb.GetUpgradeClusterInformationReply, error) {
	vs, err := s.svc.UpgradeOptions(ctx, req.GetName())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "cluster", input.Quote(req.GetName()))
	}
	out := &kaaspb.GetUpgradeClusterInformationReply{Ok: len(vs) > 0, Versions: []string{}}
	for _, v := range vs {
		out.Versions = append(out.Versions, v.String())
	}
	return out, nil
}

// UpgradeCluster starts a rolling upgrade (control plane first, then each pool, one machine
// at a time; status RECONCILING, ERROR if a step fails).
func (s *ClusterServer) UpgradeCluster(ctx context.Context, req *kaaspb.UpgradeClusterMsg) (*kaaspb.UpgradeClusterReply, error) {
	if err := s.svc.Upgrade(ctx, req.GetName(), req.GetVersion()); err != nil {
		return nil, toStatus(ctx, s.log, err, "cluster", input.Quote(req.GetName()), "version", input.Quote(req.GetVersion()))
	}
	return &kaaspb.UpgradeClusterReply{Ok: true}, nil
}

// caller is the account the token check put into ctx; a call without one (none reaches a
// handler) is a caller of no role, who gets no kubeconfig, and whose clusters have no owner
// and count against the quota of every such cluster together (see cluster.Owner), never
// against nobody's.
func caller(ctx context.Context) cluster.Caller {
	a, ok := authn.AccountFrom(ctx)
	if !ok {
		return cluster.Caller{}
	}
	return cluster.Caller{ID: a.ID, Name: a.Name, Role: a.Role, Expires: a.Expires}
}

func item(c cluster.Cluster) *kaaspb.ClusterItem {
	return &kaaspb.ClusterItem{Name: c.Name, StatusMessage: c.StatusMessage, Status: kaaspb.ClusterStatus(c.Status)}
}

func labels(ls []*kaaspb.KubernetesLabel) []cluster.Label {
	out := make([]cluster.Label, 0, len(ls))
	for _, l := range ls {
		out = append(out, cluster.Label{Name: l.GetName(), Value: l.GetValue()})
	}
	return out
}

func poolSpecs(ps []*kaaspb.MachineSpec) []cluster.PoolSpec {
	out := make([]cluster.PoolSpec, 0, len(ps))
	for _, p := range ps {
		out = append(out, cluster.PoolSpec{Name: p.GetName(), InstanceType: p.GetInstanceType(), Count: int(p.GetCount()), Labels: labels(p.GetLabels())})
	}
	return out
}
