package operator

import (
	"context"
	"log/slog"

	reconcilerv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/reconciler/v1"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/errmap"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/operator/reconciler"
)

// ReconcilerServer implements cnpgi.reconciler.v1.ReconcilerHooks: it holds back the
// reconciliation of Clusters and Backups whose object store is missing or unreachable.
type ReconcilerServer struct {
	reconcilerv1.UnimplementedReconcilerHooksServer
	gate *reconciler.Gate
	log  *slog.Logger
}

// NewReconcilerServer decides with gate.
func NewReconcilerServer(gate *reconciler.Gate, log *slog.Logger) *ReconcilerServer {
	return &ReconcilerServer{gate: gate, log: log}
}

// GetCapabilities hooks the Cluster and the Backup reconcilers.
func (s *ReconcilerServer) GetCapabilities(context.Context, *reconcilerv1.ReconcilerHooksCapabilitiesRequest) (*reconcilerv1.ReconcilerHooksCapabilitiesResult, error) {
	return &reconcilerv1.ReconcilerHooksCapabilitiesResult{ReconcilerCapabilities: []*reconcilerv1.ReconcilerHooksCapability{
		{Kind: reconcilerv1.ReconcilerHooksCapability_KIND_CLUSTER},
		{Kind: reconcilerv1.ReconcilerHooksCapability_KIND_BACKUP},
	}}, nil
}

// Pre runs before the operator reconciles: it grants the instances their access to the
// ObjectStores they use, then checks the store.
func (s *ReconcilerServer) Pre(ctx context.Context, req *reconcilerv1.ReconcilerHooksRequest) (*reconcilerv1.ReconcilerHooksResult, error) {
	return s.answer(ctx, s.gate.Prepare, req)
}

// Post runs after the operator reconciled: the store may have gone away meanwhile.
func (s *ReconcilerServer) Post(ctx context.Context, req *reconcilerv1.ReconcilerHooksRequest) (*reconcilerv1.ReconcilerHooksResult, error) {
	return s.answer(ctx, s.gate.Check, req)
}

func (s *ReconcilerServer) answer(ctx context.Context, decide func(ctx context.Context, clusterDef, resourceDef []byte) (reconciler.Decision, error),
	req *reconcilerv1.ReconcilerHooksRequest) (*reconcilerv1.ReconcilerHooksResult, error) {
	d, err := decide(ctx, req.GetClusterDefinition(), req.GetResourceDefinition())
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	if d.Requeue {
		return &reconcilerv1.ReconcilerHooksResult{
			Behavior: reconcilerv1.ReconcilerHooksResult_BEHAVIOR_REQUEUE, RequeueAfter: int64(d.RequeueAfter.Seconds()),
		}, nil
	}
	return &reconcilerv1.ReconcilerHooksResult{Behavior: reconcilerv1.ReconcilerHooksResult_BEHAVIOR_CONTINUE}, nil
}
