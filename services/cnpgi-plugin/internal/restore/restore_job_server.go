package restore

import (
	"github.com/plinth-dev/plinth/libs/platform/input"

	"context"
	"errors"
	"fmt"
	"log/slog"

	walv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/wal/v1"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/errmap"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// RestoreJobServer implements cnpgi.wal.v1.RestoreJobHooks (sic: the wal package): the
// full-recovery Job's restore of PGDATA from a base backup.
type RestoreJobServer struct {
	walv1.UnimplementedRestoreJobHooksServer
	svc    *Service
	stores *stores.Registry
	plugin string
	log    *slog.Logger
}

// NewRestoreJobServer restores with svc for clusters that recover from plugin.
func NewRestoreJobServer(svc *Service, stores *stores.Registry, plugin string, log *slog.Logger) *RestoreJobServer {
	return &RestoreJobServer{svc: svc, stores: stores, plugin: plugin, log: log}
}

// GetCapabilities says the plugin restores.
func (s *RestoreJobServer) GetCapabilities(context.Context, *walv1.RestoreJobHooksCapabilitiesRequest) (*walv1.RestoreJobHooksCapabilitiesResult, error) {
	return &walv1.RestoreJobHooksCapabilitiesResult{Capabilities: []*walv1.RestoreJobHooksCapability{{Kind: walv1.RestoreJobHooksCapability_KIND_RESTORE}}}, nil
}

// Restore fills PGDATA from the recovery source's best base backup and returns the recovery
// configuration (restore_command and the cluster's recovery target) and environment.
func (s *RestoreJobServer) Restore(ctx context.Context, req *walv1.RestoreRequest) (*walv1.RestoreResponse, error) {
	r, err := s.request(ctx, req)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	res, err := s.svc.Restore(ctx, r)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	s.log.InfoContext(ctx, "PGDATA restored", "backup_id", res.Backup.ID, "store", r.Source.Store.Name, "server", r.Source.Server)
	return &walv1.RestoreResponse{RestoreConfig: res.Config, Envs: res.Envs}, nil
}

func (s *RestoreJobServer) request(ctx context.Context, req *walv1.RestoreRequest) (Request, error) {
	c, err := cluster.Parse(req.GetClusterDefinition())
	if err != nil {
		return Request{}, err
	}
	if !s.recoversFromUs(c) {
		return Request{}, fmt.Errorf("%w: spec.bootstrap.recovery.source must name a spec.externalClusters[] entry whose plugin is %s",
			cluster.ErrPluginNotUsed, s.plugin)
	}
	// The restore job runs before the cluster has a primary: the source is the external
	// cluster's archive, whatever the status says.
	bootstrapping := *c
	bootstrapping.Status.CurrentPrimary = ""
	ct, err := bootstrapping.RestoreTarget(s.plugin)
	if err != nil {
		return Request{}, err
	}
	src, err := wal.Resolve(ctx, s.stores, ct)
	if err != nil {
		return Request{}, err
	}
	relocations, err := c.Relocations(ct)
	if err != nil {
		return Request{}, input.Invalid("spec.externalClusters.plugin.parameters."+cluster.ParamTablespaceMap, "%v", err)
	}
	target, err := ParseTarget(req.GetClusterDefinition())
	if err != nil {
		return Request{}, err
	}
	r := Request{Source: src, Target: target, Relocations: relocations}
	check := !c.SkipEmptyWALArchiveCheck()
	if req.CheckEmptyWalArchive != nil { // operators built on cnpg-i v0.6.0 decide themselves
		check = *req.CheckEmptyWalArchive
	}
	if check {
		own, err := s.archiveTarget(ctx, c)
		switch {
		case err == nil:
			r.EmptyArchive = &own
		case !errors.Is(err, cluster.ErrPluginNotUsed): // a cluster that archives elsewhere has nothing to check here
			return Request{}, err
		}
	}
	return r, nil
}

func (s *RestoreJobServer) recoversFromUs(c *cluster.Cluster) bool {
	b := c.Spec.Bootstrap
	if b == nil || b.Recovery == nil || b.Recovery.Source == "" {
		return false
	}
	for _, ec := range c.Spec.ExternalClusters {
		if ec.Name == b.Recovery.Source {
			return ec.Plugin != nil && ec.Plugin.Name == s.plugin
		}
	}
	return false
}

// archiveTarget is where c archives its own WAL.
func (s *RestoreJobServer) archiveTarget(ctx context.Context, c *cluster.Cluster) (wal.Target, error) {
	ct, err := c.ArchiveTarget(s.plugin)
	if err != nil {
		return wal.Target{}, err
	}
	return wal.Resolve(ctx, s.stores, ct)
}
