package instance

import (
	"context"
	"log/slog"

	identityv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/identity/v1"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/errmap"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/instance/pgconfig"
)

// PostgresServer implements cnpgi.identity.v1.Postgres (the package name is upstream's): the
// archiving settings the plugin needs in postgresql.conf.
type PostgresServer struct {
	identityv1.UnimplementedPostgresServer
	plugin string
	log    *slog.Logger
}

// NewPostgresServer enriches the configuration of clusters that enable plugin.
func NewPostgresServer(plugin string, log *slog.Logger) *PostgresServer {
	return &PostgresServer{plugin: plugin, log: log}
}

// GetCapabilities lists EnrichConfiguration.
func (s *PostgresServer) GetCapabilities(context.Context, *identityv1.PostgresCapabilitiesRequest) (*identityv1.PostgresCapabilitiesResult, error) {
	return &identityv1.PostgresCapabilitiesResult{Capabilities: []*identityv1.PostgresCapability{{
		Type: &identityv1.PostgresCapability_Rpc{Rpc: &identityv1.PostgresCapability_RPC{Type: identityv1.PostgresCapability_RPC_TYPE_ENRICH_CONFIGURATION}},
	}}}, nil
}

// EnrichConfiguration answers the whole configuration with the missing archiving settings
// added, or an empty map when nothing is missing (which keeps the caller's map).
func (s *PostgresServer) EnrichConfiguration(ctx context.Context, req *identityv1.EnrichConfigurationRequest) (*identityv1.EnrichConfigurationResult, error) {
	var op pgconfig.Operation
	switch req.GetOperationType().GetType() {
	case identityv1.OperationType_TYPE_UNSPECIFIED:
		op = pgconfig.OperationUnspecified
	case identityv1.OperationType_TYPE_INIT:
		op = pgconfig.OperationInit
	case identityv1.OperationType_TYPE_RESTORE:
		op = pgconfig.OperationRestore
	case identityv1.OperationType_TYPE_RECONCILE:
		op = pgconfig.OperationReconcile
	case identityv1.OperationType_TYPE_UPGRADE:
		op = pgconfig.OperationUpgrade
	default:
		// An operation newer than this plugin: adding settings to it could be wrong.
		return &identityv1.EnrichConfigurationResult{}, nil
	}
	configs, err := pgconfig.Enrich(req.GetConfigs(), req.GetClusterDefinition(), op, s.plugin)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	return &identityv1.EnrichConfigurationResult{Configs: configs}, nil
}
