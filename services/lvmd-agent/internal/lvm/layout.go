package lvm

import (
	"errors"
	"fmt"
	"sort"
)

// ErrUnsupportedLayout: a volume's segments are of a type whose bytes cannot be located on
// the physical volumes by arithmetic (raid, mirror, thin, cache...): only linear and striped
// volumes can be read without device-mapper.
var ErrUnsupportedLayout = errors.New("volume layout cannot be read through its physical volumes")

// Layout maps the bytes of an inactive logical volume to bytes on its physical volumes, from
// lvm's own segment map: a linear area continues byte for byte on its PV; a striped segment
// deals StripeSize chunks to its areas in turn. This is how the agent reads and writes a
// volume when device-mapper is missing and the volume cannot be activated.
type Layout struct {
	// Size is the volume's size in bytes.
	Size uint64
	segs []mappedSegment
}

type mappedSegment struct {
	start, length uint64 // logical bytes
	stripeSize    uint64 // bytes per chunk; 0 for one area
	areas         []physical
}

// physical is where an area starts: a device and the byte offset of its first extent.
type physical struct {
	device string
	offset uint64
}

// NewLayout builds the map from a volume's segments, its volume group's PVs and extent size.
func NewLayout(segs []Segment, pvs []PV, extentSize uint64) (*Layout, error) {
	if extentSize == 0 {
		return nil, errors.New("layout: extent size is 0")
	}
	starts := map[string]uint64{}
	for _, pv := range pvs {
		starts[pv.Name] = pv.PEStart
	}
	sorted := append([]Segment(nil), segs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].StartExtent < sorted[j].StartExtent })
	l := &Layout{}
	var next uint64 // the next logical extent
	for _, s := range sorted {
		if s.Type != "linear" && s.Type != "striped" {
			return nil, fmt.Errorf("%w: segment type %q", ErrUnsupportedLayout, clip(s.Type))
		}
		if s.StartExtent != next || s.Extents == 0 || len(s.Areas) == 0 {
			return nil, fmt.Errorf("layout: segments are not contiguous at extent %d", next)
		}
		n := uint64(len(s.Areas))
		if s.Extents%n != 0 {
			return nil, fmt.Errorf("layout: %d extents do not divide into %d stripes", s.Extents, n)
		}
		m := mappedSegment{start: mulOrMax(s.StartExtent, extentSize), length: mulOrMax(s.Extents, extentSize)}
		if n > 1 {
			if s.StripeSize == 0 || extentSize%s.StripeSize != 0 {
				return nil, fmt.Errorf("layout: stripe size %d does not divide the extent size %d", s.StripeSize, extentSize)
			}
			m.stripeSize = s.StripeSize
		}
		for _, a := range s.Areas {
			pe, ok := starts[a.PV]
			if !ok {
				return nil, fmt.Errorf("layout: physical volume %q is not in the volume group", clip(a.PV))
			}
			if a.Extents != s.Extents/n {
				return nil, fmt.Errorf("layout: area on %q has %d extents, want %d", clip(a.PV), a.Extents, s.Extents/n)
			}
			m.areas = append(m.areas, physical{device: a.PV, offset: pe + mulOrMax(a.FirstExtent, extentSize)})
		}
		if m.start > ^uint64(0)-m.length {
			return nil, errors.New("layout: volume larger than 16 EiB")
		}
		l.segs = append(l.segs, m)
		next += s.Extents
	}
	if len(l.segs) == 0 {
		return nil, errors.New("layout: the volume has no segments")
	}
	last := l.segs[len(l.segs)-1]
	l.Size = last.start + last.length
	return l, nil
}

// mulOrMax multiplies, saturating instead of wrapping: a report claiming absurd extents
// yields an absurd size that later checks refuse, never a small wrong offset.
func mulOrMax(a, b uint64) uint64 {
	if a != 0 && b > ^uint64(0)/a {
		return ^uint64(0)
	}
	return a * b
}

// Locate returns the device holding logical byte off, the byte offset there, and how many
// bytes from off continue contiguously on that device (at least 1). off must be < Size.
func (l *Layout) Locate(off uint64) (device string, devOff uint64, n uint64) {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].start+l.segs[i].length > off })
	s := l.segs[i]
	rel := off - s.start
	if len(s.areas) == 1 {
		return s.areas[0].device, s.areas[0].offset + rel, s.length - rel
	}
	chunk, within := rel/s.stripeSize, rel%s.stripeSize
	stripes := uint64(len(s.areas))
	a := s.areas[chunk%stripes]
	return a.device, a.offset + (chunk/stripes)*s.stripeSize + within, min(s.stripeSize-within, s.length-rel)
}

// Devices lists the physical volumes the volume uses, each once.
func (l *Layout) Devices() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range l.segs {
		for _, a := range s.areas {
			if !seen[a.device] {
				seen[a.device] = true
				out = append(out, a.device)
			}
		}
	}
	return out
}

// Extents describes the layout for a backup manifest: per segment, the logical range and
// where each stripe lives.
func (l *Layout) Extents() []ExtentRange {
	out := make([]ExtentRange, 0, len(l.segs))
	for _, s := range l.segs {
		r := ExtentRange{Offset: s.start, Length: s.length, StripeSize: s.stripeSize}
		for _, a := range s.areas {
			r.Devices = append(r.Devices, DeviceOffset{Device: a.device, Offset: a.offset})
		}
		out = append(out, r)
	}
	return out
}

// ExtentRange is one segment of a layout, for manifests and logs.
type ExtentRange struct {
	Offset     uint64         `json:"offset"`
	Length     uint64         `json:"length"`
	StripeSize uint64         `json:"stripe_size,omitempty"`
	Devices    []DeviceOffset `json:"devices"`
}

// DeviceOffset is where a stripe of a segment starts.
type DeviceOffset struct {
	Device string `json:"device"`
	Offset uint64 `json:"offset"`
}
