package cluster

import (
	"context"
	"fmt"
	"slices"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// UpgradeOptions lists the versions the cluster may be upgraded to now.
func (s *Service) UpgradeOptions(ctx context.Context, name string) ([]Version, error) {
	if err := ValidName("name", name); err != nil {
		return nil, err
	}
	v, err := s.store.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	if v.Deleting || v.Version != v.TargetVersion {
		return nil, nil // nothing may start now; the reply says ok=false
	}
	cur, err := ParseVersion(v.Version)
	if err != nil {
		return nil, fmt.Errorf("stored version of cluster %q: %w", v.Name, err)
	}
	return s.rules.Catalog.UpgradesFrom(cur), nil
}

// Upgrade starts a rolling upgrade to version.
func (s *Service) Upgrade(ctx context.Context, name, version string) error {
	if err := ValidName("name", name); err != nil {
		return err
	}
	if err := input.Required("version", version, 32); err != nil {
		return err
	}
	target, err := s.rules.Version("version", version)
	if err != nil {
		return err
	}
	_, err = s.update(ctx, name, func(v *View) error {
		if err := mutable(v); err != nil {
			return err
		}
		switch {
		case v.TargetVersion == target.String() && v.Version != v.TargetVersion:
			return nil // the same upgrade again: already under way
		case v.Version != v.TargetVersion:
			return conflict("cluster %q is being upgraded to %s; wait until it finishes", v.Name, v.TargetVersion)
		case !v.ReadyOnce:
			return conflict("cluster %q is still being created; upgrade it once it is RUNNING", v.Name)
		case v.Version == target.String():
			return conflict("cluster %q already runs %s", v.Name, target)
		}
		for _, m := range v.Machines {
			if m.State == MachineFailed && !m.Release {
				return conflict("machine %s of cluster %q failed; scale it away or delete its pool before upgrading", m.Name, v.Name)
			}
		}
		cur, err := ParseVersion(v.Version)
		if err != nil {
			return fmt.Errorf("stored version of cluster %q: %w", v.Name, err)
		}
		allowed := s.rules.Catalog.UpgradesFrom(cur)
		if !slices.Contains(allowed, target) {
			return conflict("cluster %q cannot move from %s to %s: Kubernetes upgrades go to a newer patch or the next minor version (possible now: %s)",
				v.Name, cur, target, listOrNone(allowed))
		}
		if err := s.preflight(v.Provider, target.String()); err != nil {
			return err
		}
		v.TargetVersion = target.String()
		return nil
	})
	return err
}

func listOrNone(vs []Version) string {
	if len(vs) == 0 {
		return "none"
	}
	c := Catalog{versions: vs}
	return c.String()
}

// Version resolves a requested version against the catalog: empty means the default.
func (r Rules) Version(field, s string) (Version, error) {
	if err := input.String(field, s, 32); err != nil {
		return Version{}, err
	}
	if s == "" {
		return r.Catalog.Default(), nil
	}
	v, err := ParseVersion(s)
	if err != nil {
		return Version{}, input.Invalid(field, "%s: %v", input.Quote(s), err)
	}
	if !r.Catalog.Contains(v) {
		return Version{}, input.Invalid(field, "%s is not supported; supported versions: %s", v, r.Catalog)
	}
	return v, nil
}
