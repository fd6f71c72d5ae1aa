package operator

import (
	"context"
	"log/slog"

	operatorv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/operator/v1"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/errmap"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

// OperatorServer implements cnpgi.operator.v1.Operator: the plugin's say on Cluster objects.
// Parameter problems are answers (ValidationErrors), not failures; only a request that is not
// a Cluster at all fails, with InvalidArgument.
type OperatorServer struct {
	operatorv1.UnimplementedOperatorServer
	rules   Rules
	stores  *stores.Registry
	history History
	log     *slog.Logger
}

// NewOperatorServer applies rules, reading recovery windows from history.
func NewOperatorServer(rules Rules, stores *stores.Registry, history History, log *slog.Logger) *OperatorServer {
	return &OperatorServer{rules: rules, stores: stores, history: history, log: log}
}

// GetCapabilities lists every Operator RPC: all are implemented.
func (s *OperatorServer) GetCapabilities(context.Context, *operatorv1.OperatorCapabilitiesRequest) (*operatorv1.OperatorCapabilitiesResult, error) {
	resp := &operatorv1.OperatorCapabilitiesResult{}
	for _, t := range []operatorv1.OperatorCapability_RPC_Type{
		operatorv1.OperatorCapability_RPC_TYPE_VALIDATE_CLUSTER_CREATE, operatorv1.OperatorCapability_RPC_TYPE_VALIDATE_CLUSTER_CHANGE,
		operatorv1.OperatorCapability_RPC_TYPE_MUTATE_CLUSTER, operatorv1.OperatorCapability_RPC_TYPE_SET_STATUS_IN_CLUSTER,
		operatorv1.OperatorCapability_RPC_TYPE_DEREGISTER,
	} {
		resp.Capabilities = append(resp.Capabilities, &operatorv1.OperatorCapability{
			Type: &operatorv1.OperatorCapability_Rpc{Rpc: &operatorv1.OperatorCapability_RPC{Type: t}},
		})
	}
	return resp, nil
}

// ValidateClusterCreate checks the plugin's parameters of a new Cluster.
func (s *OperatorServer) ValidateClusterCreate(ctx context.Context, req *operatorv1.OperatorValidateClusterCreateRequest) (*operatorv1.OperatorValidateClusterCreateResult, error) {
	c, err := cluster.ParseField(req.GetDefinition(), "definition")
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	return &operatorv1.OperatorValidateClusterCreateResult{ValidationErrors: validationErrors(s.rules.ValidateCreate(c))}, nil
}

// ValidateClusterChange checks the plugin's parameters of a changed Cluster, and that its
// server name stays.
func (s *OperatorServer) ValidateClusterChange(ctx context.Context, req *operatorv1.OperatorValidateClusterChangeRequest) (*operatorv1.OperatorValidateClusterChangeResult, error) {
	old, err := cluster.ParseField(req.GetOldCluster(), "old_cluster")
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	updated, err := cluster.ParseField(req.GetNewCluster(), "new_cluster")
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	return &operatorv1.OperatorValidateClusterChangeResult{ValidationErrors: validationErrors(s.rules.ValidateChange(old, updated))}, nil
}

// MutateCluster answers the plugin's defaults as a JSON patch (empty: nothing to default).
func (s *OperatorServer) MutateCluster(ctx context.Context, req *operatorv1.OperatorMutateClusterRequest) (*operatorv1.OperatorMutateClusterResult, error) {
	c, err := cluster.ParseField(req.GetDefinition(), "definition")
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	patch, err := s.rules.Mutate(c).Marshal()
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	return &operatorv1.OperatorMutateClusterResult{JsonPatch: patch}, nil
}

// SetStatusInCluster answers the Cluster's recovery window, or nothing when the Cluster
// already shows it (each answer costs a status patch and a requeue).
func (s *OperatorServer) SetStatusInCluster(ctx context.Context, req *operatorv1.SetStatusInClusterRequest) (*operatorv1.SetStatusInClusterResponse, error) {
	c, err := cluster.ParseField(req.GetCluster(), "cluster")
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	resolve := func(ctx context.Context, t cluster.Target) (string, error) {
		st, err := s.stores.Lookup(ctx, t.Namespace, t.BarmanObject, t.ObjectStore)
		if err != nil {
			return "", err
		}
		return st.Name, nil
	}
	status, err := s.rules.Status(ctx, c, s.history, resolve)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	return &operatorv1.SetStatusInClusterResponse{JsonStatus: status}, nil
}

// Deregister acknowledges that a Cluster stopped using the plugin. The plugin keeps no
// per-cluster state outside the archive, and the archive must outlive the cluster (it is
// what a recovery needs), so there is nothing to release.
func (s *OperatorServer) Deregister(ctx context.Context, req *operatorv1.DeregisterRequest) (*operatorv1.DeregisterResponse, error) {
	c, err := cluster.ParseField(req.GetDefinition(), "definition")
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	s.log.InfoContext(ctx, "cluster deregistered; its archive is kept", "cluster", c.Metadata.Name, "namespace", c.Metadata.Namespace)
	return &operatorv1.DeregisterResponse{}, nil
}

// validationErrors converts field errors; each keeps at least one path component, since the
// operator builds a field path from the first (an empty one would crash it).
func validationErrors(errs []FieldError) []*operatorv1.ValidationError {
	out := make([]*operatorv1.ValidationError, 0, len(errs))
	for _, e := range errs {
		path := e.Path
		if len(path) == 0 {
			path = []string{"spec"}
		}
		out = append(out, &operatorv1.ValidationError{PathComponents: path, Value: e.Value, Message: e.Message})
	}
	return out
}
