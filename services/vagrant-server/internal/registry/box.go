package registry

import (
	"context"
	"errors"

	"github.com/hashicorp/go-version"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

const (
	// DefaultBoxVersion is the version of a box added without one (upstream: "0" or unset).
	DefaultBoxVersion = "0.0.0"
	// DefaultBoxConstraint is what FindBox applies when no version is asked for. Upstream
	// uses "> 0", which can never find an unversioned (0.0.0) box; ">= 0" can.
	DefaultBoxConstraint = ">= 0"
)

// UpsertBox creates or updates a box. Without a resource_id the box is matched by name,
// version and provider: an existing one is updated, otherwise one is created (which also needs
// the directory). last_update is set to now, as upstream does.
func (s *Service) UpsertBox(ctx context.Context, b *vagrant.Box) (*vagrant.Box, error) {
	if b == nil {
		return nil, Invalid("box", "required")
	}
	b = proto.Clone(b).(*vagrant.Box)
	b.LastUpdate = timestamppb.New(s.now())
	if b.ResourceId == "" || b.Version != "" {
		v, err := normalizeBoxVersion(b.Version)
		if err != nil {
			return nil, err
		}
		b.Version = v
	}
	if b.ResourceId != "" {
		return s.updateBox(ctx, b.ResourceId, b)
	}
	switch {
	case b.Name == "":
		return nil, Invalid("box.name", "required without a resource_id")
	case b.Provider == "":
		return nil, Invalid("box.provider", "required without a resource_id")
	}
	created, err := s.createBox(ctx, b)
	var pe *PreconditionError
	if errors.As(err, &pe) && pe.Field == "box.name" {
		// Another caller created the same name/version/provider since we looked.
		created, err = s.createBox(ctx, b)
	}
	return created, err
}

func (s *Service) createBox(ctx context.Context, b *vagrant.Box) (*vagrant.Box, error) {
	same, err := s.store.BoxesNamed(ctx, b.Name, b.Provider)
	if err != nil {
		return nil, err
	}
	for _, c := range same {
		if c.Version == b.Version {
			return s.updateBox(ctx, c.ResourceId, b)
		}
	}
	if b.Directory == "" {
		return nil, Invalid("box.directory", "required to create a box")
	}
	b = proto.Clone(b).(*vagrant.Box)
	if b.ResourceId, err = s.newID(); err != nil {
		return nil, err
	}
	return s.store.CreateBox(ctx, b)
}

func (s *Service) updateBox(ctx context.Context, id string, b *vagrant.Box) (*vagrant.Box, error) {
	return s.store.UpdateBox(ctx, id, func(cur *vagrant.Box) error {
		b.ResourceId = cur.ResourceId
		overlay(cur, b)
		return nil
	})
}

// normalizeBoxVersion applies the default version and checks the version parses.
func normalizeBoxVersion(v string) (string, error) {
	if v == "" || v == "0" {
		return DefaultBoxVersion, nil
	}
	if _, err := version.NewVersion(v); err != nil {
		return "", Invalid("box.version", input.Quote(v)+" is not a version (e.g. 1.2.3)")
	}
	return v, nil
}

// GetBox returns the box ref.resource_id names.
func (s *Service) GetBox(ctx context.Context, ref *sdk.Ref_Box) (*vagrant.Box, error) {
	return byID(ctx, "box.resource_id", ref.GetResourceId(), s.store.GetBox)
}

// FindBox returns the box ref describes: by resource_id, else the highest version of the box
// named ref.name for ref.provider that satisfies ref.version, read as a version constraint
// (">= 1.0, < 2", "~> 1.2", or a bare version meaning exactly it; empty: any version). It
// returns nil, nil when no box matches: upstream answers an empty response, not NotFound.
func (s *Service) FindBox(ctx context.Context, ref *sdk.Ref_Box) (*vagrant.Box, error) {
	if ref == nil {
		return nil, Invalid("box", "required")
	}
	if ref.ResourceId != "" {
		return s.store.GetBox(ctx, ref.ResourceId)
	}
	switch {
	case ref.Name == "":
		return nil, Invalid("box.name", "required to find a box")
	case ref.Provider == "":
		return nil, Invalid("box.provider", "required to find a box")
	}
	want := ref.Version
	switch want {
	case "":
		want = DefaultBoxConstraint
	case "0":
		want = DefaultBoxVersion
	}
	constraint, err := version.NewConstraint(want)
	if err != nil {
		return nil, Invalid("box.version", input.Quote(want)+" is not a version or version constraint (e.g. \">= 1.0, < 2\")")
	}
	boxes, err := s.store.BoxesNamed(ctx, ref.Name, ref.Provider)
	if err != nil {
		return nil, err
	}
	return highestMatch(boxes, constraint), nil
}

// highestMatch picks the box with the highest version that satisfies c (nil when none).
// Versions that do not parse (never stored by UpsertBox) are skipped.
func highestMatch(boxes []*vagrant.Box, c version.Constraints) *vagrant.Box {
	var best *vagrant.Box
	var bestV *version.Version
	for _, b := range boxes {
		v, err := version.NewVersion(b.Version)
		if err != nil || !c.Check(v) {
			continue
		}
		if best == nil || v.GreaterThan(bestV) {
			best, bestV = b, v
		}
	}
	return best
}

// ListBoxes returns a reference to every box.
func (s *Service) ListBoxes(ctx context.Context) ([]*sdk.Ref_Box, error) {
	return s.store.ListBoxes(ctx)
}

// DeleteBox deletes the box ref names (by resource_id, or by name, version and provider).
// A box that does not exist is already deleted: no error, as upstream.
func (s *Service) DeleteBox(ctx context.Context, ref *sdk.Ref_Box) error {
	if id := ref.GetResourceId(); id != "" {
		return s.store.DeleteBox(ctx, id)
	}
	if ref.GetName() == "" || ref.GetProvider() == "" || ref.GetVersion() == "" {
		return Invalid("box", "give its resource_id, or its name, version and provider")
	}
	v, err := normalizeBoxVersion(ref.GetVersion())
	if err != nil {
		return err
	}
	boxes, err := s.store.BoxesNamed(ctx, ref.GetName(), ref.GetProvider())
	if err != nil {
		return err
	}
	for _, b := range boxes {
		if b.Version == v {
			return s.store.DeleteBox(ctx, b.ResourceId)
		}
	}
	return nil
}
