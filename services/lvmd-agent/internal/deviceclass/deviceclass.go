// Package deviceclass reads the agent's device classes from a file compatible with TopoLVM's
// lvmd.yaml (socket-name, device-classes with name, volume-group, default, spare-gb, stripe,
// stripe-size, lvcreate-options, type and thin-pool; lvcreate-option-classes) and validates
// them as lvmd does, with messages naming the field: at least one class, exactly one
// default, qualified names, unique names, one thick class per volume group and one thin class
// per thin pool — and, where lvmd passes anything on, only lvcreate options that shape the
// new volume.
package deviceclass

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultSpareGB is the spare space of a class that does not say (TopoLVM's default).
const DefaultSpareGB = 10

// DeviceClass maps a TopoLVM device class to an LVM volume group.
type DeviceClass struct {
	// Name is what CreateLV and friends call the class (a Kubernetes qualified name).
	Name string `yaml:"name"`
	// VolumeGroup is the LVM volume group behind the class.
	VolumeGroup string `yaml:"volume-group"`
	// Default marks the class used when a request names none.
	Default bool `yaml:"default"`
	// SpareGB is space (GiB) the class keeps free: free space is reported, and allocated,
	// only above it. nil means DefaultSpareGB.
	SpareGB *uint64 `yaml:"spare-gb"`
	// Stripe is the number of stripes of new volumes (lvcreate -i); nil leaves lvm's default.
	Stripe *uint `yaml:"stripe"`
	// StripeSize is lvcreate -I ("64", "64k", "1m").
	StripeSize string `yaml:"stripe-size"`
	// LVCreateOptions are further lvcreate arguments.
	LVCreateOptions []string `yaml:"lvcreate-options"`
	// Type is "thick" (the default when empty: volumes from the group's free extents) or
	// "thin" (volumes in ThinPool, TopoLVM v0.13).
	Type string `yaml:"type"`
	// ThinPool is the thin pool of a thin class; it is ignored for a thick one, as lvmd
	// ignores it.
	ThinPool *ThinPool `yaml:"thin-pool"`
}

// The device class types.
const (
	TypeThick = "thick"
	TypeThin  = "thin"
)

// ThinPool is a thin class's pool: an existing thin pool of the volume group (lvmd does not
// make it) and how far its volumes' sizes may add up beyond its data size.
type ThinPool struct {
	// Name is the pool's logical volume name.
	Name string `yaml:"name"`
	// OverprovisionRatio bounds the sum of the pool's volume sizes: at most this times the
	// pool's size (at least 1.0).
	OverprovisionRatio float64 `yaml:"overprovision-ratio"`
}

// IsThin reports whether the class makes thin volumes.
func (dc *DeviceClass) IsThin() bool { return dc.Type == TypeThin }

// Pool is the thin pool's name, "" for a thick class.
func (dc *DeviceClass) Pool() string {
	if !dc.IsThin() || dc.ThinPool == nil {
		return ""
	}
	return dc.ThinPool.Name
}

// Spare is the class's spare space in bytes.
func (dc *DeviceClass) Spare() uint64 {
	if dc.SpareGB == nil {
		return DefaultSpareGB << 30
	}
	return *dc.SpareGB << 30
}

// File is lvmd.yaml.
type File struct {
	// SocketName is the unix socket lvmd listens on.
	SocketName string `yaml:"socket-name"`
	// DeviceClasses are the classes, in file order.
	DeviceClasses []*DeviceClass `yaml:"device-classes"`
	// OptionClasses are the lvcreate option classes a CreateLV call may name.
	OptionClasses []*OptionClass `yaml:"lvcreate-option-classes"`
}

// maxFile bounds a configuration file; a real one is a few hundred bytes.
const maxFile = 1 << 20

// Parse reads lvmd.yaml. Keys the agent does not know are ignored, as lvmd ignores them,
// and listed in warnings so an operator learns they have no effect.
func Parse(data []byte) (f *File, warnings []string, err error) {
	if len(data) > maxFile {
		return nil, nil, fmt.Errorf("the file is %d bytes; at most %d are allowed", len(data), maxFile)
	}
	f = &File{}
	if err := yaml.Unmarshal(data, f); err != nil {
		return nil, nil, fmt.Errorf("not valid lvmd.yaml: %w", err)
	}
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&File{}); err != nil && !strings.Contains(err.Error(), "EOF") {
		warnings = append(warnings, "ignored: "+err.Error())
	}
	return f, warnings, nil
}

// Validate checks the classes as TopoLVM's lvmd does, reporting every problem at once.
func (f *File) Validate() error {
	var errs []error
	if len(f.DeviceClasses) == 0 {
		return errors.New("device-classes: at least one device class is required")
	}
	names, vgs := map[string]int{}, map[string]int{}
	defaults := 0
	for i, dc := range f.DeviceClasses {
		field := fmt.Sprintf("device-classes[%d]", i)
		if dc == nil {
			errs = append(errs, fmt.Errorf("%s: is empty", field))
			continue
		}
		if err := QualifiedName(dc.Name); err != nil {
			errs = append(errs, fmt.Errorf("%s.name: %w", field, err))
		} else if j, dup := names[dc.Name]; dup {
			errs = append(errs, fmt.Errorf("%s.name: %q is also the name of device-classes[%d]", field, dc.Name, j))
		} else {
			names[dc.Name] = i
		}
		// A group has at most one thick class and a pool one thin class (lvmd's key:
		// the group, or group/pool).
		target := dc.VolumeGroup
		switch dc.Type {
		case "", TypeThick:
		case TypeThin:
			errs = append(errs, validateThinPool(field+".thin-pool", dc.ThinPool)...)
			if dc.ThinPool != nil {
				target += "/" + dc.ThinPool.Name
			}
		default:
			errs = append(errs, fmt.Errorf("%s.type: %q is neither %s nor %s (empty is %s)", field, clip(dc.Type), TypeThick, TypeThin, TypeThick))
		}
		if err := VGName(dc.VolumeGroup); err != nil {
			errs = append(errs, fmt.Errorf("%s.volume-group: %w", field, err))
		} else if j, dup := vgs[target]; dup && target == dc.VolumeGroup {
			errs = append(errs, fmt.Errorf("%s.volume-group: %q is also the volume group of device-classes[%d] (one thick class per volume group)", field, dc.VolumeGroup, j))
		} else if dup {
			errs = append(errs, fmt.Errorf("%s.thin-pool.name: %q is also the thin pool of device-classes[%d]", field, target, j))
		} else {
			vgs[target] = i
		}
		if dc.Default {
			defaults++
		}
		if dc.SpareGB != nil && *dc.SpareGB > 1<<33 {
			errs = append(errs, fmt.Errorf("%s.spare-gb: %d GiB is not a plausible spare", field, *dc.SpareGB))
		}
		if dc.Stripe != nil && (*dc.Stripe < 1 || *dc.Stripe > 128) {
			errs = append(errs, fmt.Errorf("%s.stripe: must be between 1 and 128", field))
		}
		if dc.StripeSize != "" && !stripeSizeRE.MatchString(dc.StripeSize) {
			errs = append(errs, fmt.Errorf("%s.stripe-size: %q is not an lvm size such as 64, 64k or 1m", field, clip(dc.StripeSize)))
		}
		errs = append(errs, ValidateLVCreateOptions(field+".lvcreate-options", dc.LVCreateOptions)...)
	}
	if defaults != 1 {
		errs = append(errs, fmt.Errorf("device-classes: exactly one class must have default: true; %d do", defaults))
	}
	errs = append(errs, validateOptionClasses(f.OptionClasses)...)
	return errors.Join(errs...)
}

// validateThinPool checks a thin class's pool: named as lvm names volumes, and a ratio of
// at least 1.
func validateThinPool(field string, tp *ThinPool) []error {
	if tp == nil {
		return []error{fmt.Errorf("%s: is required for a thin class (name and overprovision-ratio)", field)}
	}
	var errs []error
	switch {
	case tp.Name == "":
		errs = append(errs, fmt.Errorf("%s.name: is required", field))
	case len(tp.Name) > 127 || tp.Name == "." || tp.Name == ".." || !vgRE.MatchString(tp.Name):
		errs = append(errs, fmt.Errorf("%s.name: %q is not a logical volume name: letters, digits and + _ . -, not starting with -", field, clip(tp.Name)))
	}
	if !(tp.OverprovisionRatio >= 1) || math.IsInf(tp.OverprovisionRatio, 0) || tp.OverprovisionRatio > maxOverprovision {
		errs = append(errs, fmt.Errorf("%s.overprovision-ratio: %v must be at least 1.0 and at most %d", field, tp.OverprovisionRatio, maxOverprovision))
	}
	return errs
}

// maxOverprovision bounds the ratio so pool size × ratio stays far from overflowing.
const maxOverprovision = 1000

var (
	// qualifiedName is Kubernetes' IsQualifiedName: an optional DNS-subdomain prefix and
	// "/", then a name of at most 63 characters.
	nameRE   = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	prefixRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// vgRE is lvm's rule for volume group names.
	vgRE         = regexp.MustCompile(`^[A-Za-z0-9+_.][A-Za-z0-9+_.-]*$`)
	stripeSizeRE = regexp.MustCompile(`^[0-9]+[bBsSkKmMgG]?$`)
)

// MaxNameLen is the longest qualified name: a 253-byte prefix, "/" and 63 bytes.
const MaxNameLen = 253 + 1 + 63

// QualifiedName checks a device class name as Kubernetes' IsQualifiedName does.
func QualifiedName(s string) error {
	name := s
	if prefix, rest, ok := strings.Cut(s, "/"); ok {
		if len(prefix) == 0 || len(prefix) > 253 || !prefixRE.MatchString(prefix) {
			return fmt.Errorf("%q has a prefix that is not a DNS subdomain (lowercase, at most 253 characters)", clip(s))
		}
		name = rest
	}
	switch {
	case name == "":
		return errors.New("is required")
	case len(name) > 63:
		return fmt.Errorf("%q is longer than 63 characters (a qualified name)", clip(s))
	case !nameRE.MatchString(name):
		return fmt.Errorf("%q is not a qualified name: alphanumerics, '-', '_' and '.', starting and ending alphanumeric", clip(s))
	}
	return nil
}

// VGName checks lvm's rule for a volume group name.
func VGName(s string) error {
	switch {
	case s == "":
		return errors.New("is required")
	case len(s) > 127:
		return fmt.Errorf("%q is longer than 127 characters", clip(s))
	case s == "." || s == ".." || !vgRE.MatchString(s):
		return fmt.Errorf("%q is not a volume group name: letters, digits and + _ . -, not starting with -", clip(s))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
