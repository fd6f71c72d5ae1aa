package volume

import (
	"context"
	"errors"
	"fmt"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
)

// CreateRequest is a new volume.
type CreateRequest struct {
	Name string
	// Size in bytes; the volume gets it rounded up to whole extents (of every stripe), as
	// lvcreate would.
	Size        uint64
	Tags        []string
	DeviceClass string
	// OptionClass, when set, names the lvcreate option class whose options lvcreate gets
	// instead of the device class's stripe, stripe-size and lvcreate-options (TopoLVM's
	// rule); an unknown one is an *OptionClassNotFoundError.
	OptionClass string
}

// Create makes a volume. Creating a volume that exists with the same size (the request's,
// rounded up to whole extents) returns it (created false), so a retried request after a
// lost answer succeeds; another size is an *ExistsError. The free-space check and lvcreate
// run under the volume group's lock, so racing creates never allocate more than the class
// has.
func (s *Service) Create(ctx context.Context, req CreateRequest) (v Volume, created bool, err error) {
	dc, err := s.class(req.DeviceClass)
	if err != nil {
		return Volume{}, false, err
	}
	if err := checkPathLen(dc.VolumeGroup, req.Name); err != nil {
		return Volume{}, false, err
	}
	spec := lvm.CreateSpec{Name: req.Name, Tags: req.Tags, StripeSize: dc.StripeSize, Options: dc.LVCreateOptions}
	if dc.Stripe != nil && !dc.IsThin() {
		spec.Stripes = *dc.Stripe
	}
	unit := stripes(dc)
	if req.OptionClass != "" {
		oc, ok := s.classes.OptionClass(req.OptionClass)
		if !ok {
			return Volume{}, false, &OptionClassNotFoundError{Name: req.OptionClass}
		}
		// Its options may stripe too, which the agent does not parse: whole extents are
		// what it can promise, and lvcreate rounds further itself.
		spec = lvm.CreateSpec{Name: req.Name, Tags: req.Tags, Options: oc.Options}
		unit = 1
	}
	if dc.IsThin() {
		spec.ThinPool, spec.StripeSize = dc.Pool(), ""
	}
	vg, lvs, unlock, err := s.lockState(ctx, dc)
	if err != nil {
		return Volume{}, false, err
	}
	defer unlock()
	spec.Size = extentBytes(req.Size, vg.ExtentSize*unit)
	if lv, ok := named(lvs, req.Name); ok {
		if lv.Size != spec.Size || !belongs(dc, lv) {
			return Volume{}, false, &ExistsError{Name: req.Name, Size: lv.Size, Request: spec.Size}
		}
		return toVolume(dc, lv), false, nil
	}
	avail, err := available(dc, vg, lvs)
	if err != nil {
		return Volume{}, false, err
	}
	if spec.Size > avail {
		return Volume{}, false, &NoSpaceError{Free: avail, Requested: req.Size}
	}
	if err := s.lvm.Create(ctx, dc.VolumeGroup, spec); err != nil {
		if errors.Is(err, lvm.ErrNoSpace) {
			// Another tool allocated extents between our check and lvcreate.
			return Volume{}, false, &NoSpaceError{Free: avail, Requested: req.Size}
		}
		return Volume{}, false, lvError(err, "create")
	}
	return s.made(ctx, dc, req.Name, "created a logical volume")
}

// made returns a volume the agent has just made, after recording the change.
func (s *Service) made(ctx context.Context, dc *deviceclass.DeviceClass, name, msg string) (Volume, bool, error) {
	lv, ok := named(s.recordChangeAndList(ctx, dc), name)
	if !ok { // the record could not read lvm: ask again
		var err error
		if lv, ok, err = s.find(ctx, dc, name); err != nil {
			return Volume{}, true, err
		}
	}
	if !ok {
		return Volume{}, true, fmt.Errorf("create: lvcreate succeeded but lvs does not list %s", name)
	}
	s.log.InfoContext(ctx, msg, "device_class", dc.Name, "name", name, "size", lv.Size)
	return toVolume(dc, lv), true, nil
}
