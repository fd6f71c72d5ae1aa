package operator

import (
	"context"
	"log/slog"

	lifecyclev1 "github.com/plinth-dev/plinth/libs/api/cnpgi/operator_lifecycle/v1"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/errmap"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/operator/lifecycle"
)

// LifecycleServer implements cnpgi.operator_lifecycle.v1.OperatorLifecycle: the instance
// sidecar in the Pods and recovery Jobs of clusters that use the plugin.
type LifecycleServer struct {
	lifecyclev1.UnimplementedOperatorLifecycleServer
	injector *lifecycle.Injector
	log      *slog.Logger
}

// NewLifecycleServer injects with injector.
func NewLifecycleServer(injector *lifecycle.Injector, log *slog.Logger) *LifecycleServer {
	return &LifecycleServer{injector: injector, log: log}
}

// GetCapabilities asks for instance Pods being created or evaluated and for Jobs being
// created (the recovery jobs are among them).
func (s *LifecycleServer) GetCapabilities(context.Context, *lifecyclev1.OperatorLifecycleCapabilitiesRequest) (*lifecyclev1.OperatorLifecycleCapabilitiesResponse, error) {
	ops := func(types ...lifecyclev1.OperatorOperationType_Type) []*lifecyclev1.OperatorOperationType {
		out := make([]*lifecyclev1.OperatorOperationType, len(types))
		for i, t := range types {
			out[i] = &lifecyclev1.OperatorOperationType{Type: t}
		}
		return out
	}
	return &lifecyclev1.OperatorLifecycleCapabilitiesResponse{LifecycleCapabilities: []*lifecyclev1.OperatorLifecycleCapabilities{
		{Group: "", Kind: "Pod", OperationTypes: ops(lifecyclev1.OperatorOperationType_TYPE_CREATE, lifecyclev1.OperatorOperationType_TYPE_EVALUATE)},
		{Group: "batch", Kind: "Job", OperationTypes: ops(lifecyclev1.OperatorOperationType_TYPE_CREATE)},
	}}, nil
}

// LifecycleHook answers the JSON patch that puts the sidecar into the object; empty when the
// object needs none (another kind or operation, a cluster without the plugin, a job that is
// not a recovery).
func (s *LifecycleServer) LifecycleHook(ctx context.Context, req *lifecyclev1.OperatorLifecycleRequest) (*lifecyclev1.OperatorLifecycleResponse, error) {
	op := lifecycle.OperationOther
	switch req.GetOperationType().GetType() {
	case lifecyclev1.OperatorOperationType_TYPE_CREATE:
		op = lifecycle.OperationCreate
	case lifecyclev1.OperatorOperationType_TYPE_EVALUATE:
		op = lifecycle.OperationEvaluate
	}
	patch, err := s.injector.Hook(op, req.GetClusterDefinition(), req.GetObjectDefinition())
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	b, err := patch.Marshal()
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	return &lifecyclev1.OperatorLifecycleResponse{JsonPatch: b}, nil
}
