package lvm

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// VGInfo is a volume group's size and free space.
type VGInfo struct {
	Name        string
	Size, Free  uint64 // bytes
	ExtentSize  uint64 // bytes
	ExtentCount uint64
	FreeExtents uint64
}

// LV is a logical volume as `lvs` lists it.
type LV struct {
	Name string
	// Size in bytes.
	Size uint64
	Tags []string
	// Major and Minor are the kernel device numbers; 0 while the volume is inactive.
	Major, Minor uint32
	// Attr is lv_attr ("-wi-a-----"); Attr[0] says the type ('t' thin pool, 's' snapshot).
	Attr string
	// Path is /dev/VG/LV.
	Path string
	// Pool is the thin pool of a thin volume ("" for any other volume).
	Pool string
	// Origin is the volume a snapshot was taken of ("" for any other volume).
	Origin string
	// DataPercent and MetadataPercent are how full a thin pool's data and metadata are (0
	// for other volumes and while the pool is inactive).
	DataPercent, MetadataPercent float64
}

// IsThinPool reports whether the volume is a thin pool (not a volume TopoLVM manages).
func (lv LV) IsThinPool() bool { return lv.Attr != "" && lv.Attr[0] == 't' }

// IsThin reports whether the volume is a thin volume (a thin snapshot is one too).
func (lv LV) IsThin() bool { return lv.Pool != "" && !lv.IsThinPool() }

// PV is a physical volume.
type PV struct {
	Name string
	// PEStart is the byte offset of the first physical extent on the device.
	PEStart uint64
	VG      string
}

// Segment is one segment of a logical volume: Extents logical extents from StartExtent,
// laid over one area per stripe.
type Segment struct {
	Type        string // "linear", "striped", ...
	StartExtent uint64
	Extents     uint64
	// StripeSize is the bytes written to one stripe before the next (0 when linear).
	StripeSize uint64
	Areas      []Area
}

// Area is a run of physical extents on one PV.
type Area struct {
	PV          string
	FirstExtent uint64
	Extents     uint64
}

// Report fields, fixed so the parsers know what to expect.
const (
	vgFields  = "vg_name,vg_size,vg_free,vg_extent_size,vg_extent_count,vg_free_count"
	lvFields  = "lv_name,lv_size,lv_tags,lv_kernel_major,lv_kernel_minor,lv_attr,lv_path,pool_lv,origin,data_percent,metadata_percent"
	pvFields  = "pv_name,pe_start,vg_name"
	segFields = "lv_name,segtype,seg_start_pe,seg_size_pe,seg_pe_ranges,stripes,stripe_size"
)

var reportArgs = []string{"--reportformat", "json", "--units", "b", "--nosuffix"}

func report(fields string, rest ...string) []string {
	return append(append(append([]string(nil), reportArgs...), "-o", fields), rest...)
}

// VGs reports the named volume groups (ErrVGNotFound when one is missing).
func (r *Runner) VGs(ctx context.Context, names ...string) ([]VGInfo, error) {
	out, err := r.run(ctx, "vgs", report(vgFields, names...)...)
	if err != nil {
		return nil, err
	}
	return parseVGs(out)
}

// VG reports one volume group.
func (r *Runner) VG(ctx context.Context, name string) (VGInfo, error) {
	vgs, err := r.VGs(ctx, name)
	if err != nil {
		return VGInfo{}, err
	}
	for _, v := range vgs {
		if v.Name == name {
			return v, nil
		}
	}
	return VGInfo{}, &Error{Kind: ErrVGNotFound, Command: "vgs", Detail: "not in the report"}
}

// LVs lists the visible logical volumes of a volume group (hidden sub-volumes are not).
func (r *Runner) LVs(ctx context.Context, vg string) ([]LV, error) {
	out, err := r.run(ctx, "lvs", report(lvFields, vg)...)
	if err != nil {
		return nil, err
	}
	return parseLVs(out)
}

// Segments reports how a logical volume is laid over its physical volumes.
func (r *Runner) Segments(ctx context.Context, vg, lv string) ([]Segment, error) {
	out, err := r.run(ctx, "lvs", report(segFields, vg+"/"+lv)...)
	if err != nil {
		return nil, err
	}
	return parseSegments(out)
}

// PVs lists the physical volumes of a volume group.
func (r *Runner) PVs(ctx context.Context, vg string) ([]PV, error) {
	out, err := r.run(ctx, "pvs", report(pvFields, "--select", "vg_name="+vg)...)
	if err != nil {
		return nil, err
	}
	return parsePVs(out)
}

// CreateSpec describes a new logical volume.
type CreateSpec struct {
	Name string
	Size uint64 // bytes
	Tags []string
	// Stripes and StripeSize (an lvm size such as "64k") spread the volume; 0 and "" leave
	// lvm's defaults.
	Stripes    uint
	StripeSize string
	// Options are extra lvcreate arguments from the device class.
	Options []string
	// ThinPool, when set, makes a thin volume of Size (its virtual size) in this pool of the
	// group instead of allocating Size from the group's free extents.
	ThinPool string
}

// Create runs lvcreate.
func (r *Runner) Create(ctx context.Context, vg string, s CreateSpec) error {
	args := []string{"-n", s.Name, "-L", bytesArg(s.Size), "-W", "y", "-y"}
	if s.ThinPool != "" {
		args = []string{"-T", vg + "/" + s.ThinPool, "-n", s.Name, "-V", bytesArg(s.Size), "-W", "y", "-y"}
	}
	for _, t := range s.Tags {
		args = append(args, "--addtag", t)
	}
	if s.Stripes > 0 {
		args = append(args, "-i", strconv.FormatUint(uint64(s.Stripes), 10))
	}
	if s.StripeSize != "" {
		args = append(args, "-I", s.StripeSize)
	}
	args = append(args, s.Options...)
	if s.ThinPool == "" {
		args = append(args, vg) // a thin volume's group is in -T
	}
	_, err := r.run(ctx, "lvcreate", args...)
	return err
}

// CreateThinPool runs lvcreate -T: a thin pool of size bytes from the group's free extents
// (what a node's administrator makes for a thin class; the agent's dev-vg and tests do too).
func (r *Runner) CreateThinPool(ctx context.Context, vg, name string, size uint64) error {
	_, err := r.run(ctx, "lvcreate", "-T", vg+"/"+name, "-L", bytesArg(size), "-y")
	return err
}

// ThinSnapshot runs lvcreate -s without a size: a thin snapshot of the thin volume origin, in
// origin's pool, with activation skip off (-k n) so that it activates like any volume.
func (r *Runner) ThinSnapshot(ctx context.Context, vg, origin, name string, tags []string) error {
	args := []string{"-s", "-k", "n", "-n", name, "-y"}
	for _, t := range tags {
		args = append(args, "--addtag", t)
	}
	_, err := r.run(ctx, "lvcreate", append(args, vg+"/"+origin)...)
	return err
}

// Activate activates a volume read-write, or makes it read-only (lvchange -p r, which lvm
// applies to the active volume at once): TopoLVM's access types "rw" and "ro".
func (r *Runner) Activate(ctx context.Context, vg, lv string, readOnly bool) error {
	args := []string{"-k", "n", "-a", "y", vg + "/" + lv}
	if readOnly {
		args = []string{"-p", "r", vg + "/" + lv}
	}
	_, err := r.run(ctx, "lvchange", args...)
	return err
}

// CreateSnapshot runs lvcreate -s: a copy-on-write snapshot of origin with cow bytes for
// the changes made to origin while it lives. It needs device-mapper.
func (r *Runner) CreateSnapshot(ctx context.Context, vg, origin, name string, cow uint64) error {
	_, err := r.run(ctx, "lvcreate", "-s", "-n", name, "-L", bytesArg(cow), "-y", vg+"/"+origin)
	return err
}

// Resize sets a logical volume's size (lvresize; it never touches a filesystem).
func (r *Runner) Resize(ctx context.Context, vg, lv string, size uint64) error {
	_, err := r.run(ctx, "lvresize", "-L", bytesArg(size), "-y", vg+"/"+lv)
	return err
}

// Remove runs lvremove -f.
func (r *Runner) Remove(ctx context.Context, vg, lv string) error {
	_, err := r.run(ctx, "lvremove", "-f", "-y", vg+"/"+lv)
	return err
}

// Version returns `lvm version`'s first line: a cheap check that lvm runs at all.
func (r *Runner) Version(ctx context.Context) (string, error) {
	out, err := r.run(ctx, "version")
	if err != nil {
		return "", err
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(first), "LVM version:")), nil
}

func bytesArg(n uint64) string { return fmt.Sprintf("%db", n) }
