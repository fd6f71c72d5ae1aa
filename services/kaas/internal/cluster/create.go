package cluster

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// Create validates and records a new cluster with its key material, owned by who unless
// that would take who beyond the quota; the reconciler provisions it.
func (s *Service) Create(ctx context.Context, spec CreateSpec, who Caller) (View, error) {
	pools, v, err := s.rules.Create(spec)
	if err != nil {
		return View{}, err
	}
	if err := s.preflight(s.provider, v.String()); err != nil {
		return View{}, err
	}
	sealed, err := s.creds.New(spec.Name)
	if err != nil {
		return View{}, fmt.Errorf("make the cluster's key material: %w", err)
	}
	c := Cluster{UID: uuid.NewString(), Name: spec.Name, Owner: Owner{ID: who.ID, Name: who.Name}, Provider: s.provider,
		Version: v.String(), TargetVersion: v.String()}
	change := New(c, pools, s.rules.FailAfter)
	return s.store.Create(ctx, change, sealed, func(held Usage) error { return s.rules.Quota.AdmitNew(change.View, held) })
}

// CreateSpec is a CreateCluster request.
type CreateSpec struct {
	Name         string
	Version      string
	ControlPlane PoolSpec // Name is ignored
	Workers      []PoolSpec
}

// Create checks a CreateCluster request and returns the cluster's pools (control plane
// first) and its version. Every error names the request field at fault.
func (r Rules) Create(s CreateSpec) ([]Pool, Version, error) {
	if err := ValidName("name", s.Name); err != nil {
		return nil, Version{}, err
	}
	v, err := r.Version("k8s_version", s.Version)
	if err != nil {
		return nil, Version{}, err
	}
	if !slices.Contains(ControlPlaneSizes, s.ControlPlane.Count) {
		return nil, Version{}, input.Invalid("control_plane_nodes.count", "is %d; a control plane has 1, 3 or 5 machines", s.ControlPlane.Count)
	}
	cp := s.ControlPlane
	cp.Name = ControlPlanePool
	cpPool, err := r.pool("control_plane_nodes", cp, RoleControlPlane)
	if err != nil {
		return nil, Version{}, err
	}
	workers, err := r.WorkerPools("worker_node_pools", s.Workers, nil)
	if err != nil {
		return nil, Version{}, err
	}
	return append([]Pool{cpPool}, workers...), v, nil
}
