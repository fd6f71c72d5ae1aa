package deviceclass

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// OptionClass is a named set of lvcreate arguments a CreateLV call may ask for instead of
// its device class's stripe, stripe-size and lvcreate-options: TopoLVM's
// lvcreate-option-classes (v0.18), chosen by a StorageClass's
// topolvm.io/lvcreate-option-class parameter.
type OptionClass struct {
	// Name is what CreateLVRequest.lvcreate_option_class says.
	Name string `yaml:"name"`
	// Options are the lvcreate arguments, each one argument ("--type=raid1", or "--type"
	// followed by "raid1").
	Options []string `yaml:"options"`
}

// MaxOptionClassNameLen bounds an option class name (a StorageClass parameter value).
const MaxOptionClassNameLen = 253

// optionClassNameRE keeps option class names printable: never a control character, so a
// name on the wire can never be taken for the fork's DataSource message (whose encoding
// starts with the tag byte 0x08 or 0x12).
var optionClassNameRE = regexp.MustCompile(`^[A-Za-z0-9][-A-Za-z0-9_./]*$`)

// lvcreateFlag is one lvcreate option the agent passes on, with the check of its value
// (nil: the option takes none).
type lvcreateFlag struct {
	long  string
	short byte // 0: no short form
	value func(string) error
}

var (
	countRE = regexp.MustCompile(`^[0-9]{1,3}$`)
	sizeRE  = regexp.MustCompile(`^[0-9]{1,12}(\.[0-9]{1,6})?[bBsSkKmMgGtT]?$`)
	// segmentTypes are the lvcreate --type values that make one new volume from the volume
	// group's free extents. Thin, cache, snapshot and VDO types name or create other
	// volumes and are refused.
	segmentTypes = []string{"linear", "striped", "mirror", "raid0", "raid0_meta", "raid1", "raid4", "raid5",
		"raid5_la", "raid5_ls", "raid5_ra", "raid5_rs", "raid5_n", "raid6", "raid6_zr", "raid6_nr", "raid6_nc",
		"raid6_ls_6", "raid6_rs_6", "raid6_la_6", "raid6_ra_6", "raid6_n_6", "raid10"}
	allocPolicies = []string{"contiguous", "cling", "cling_by_tags", "normal", "anywhere", "inherit"}
)

func oneOf(what string, allowed []string) func(string) error {
	return func(v string) error {
		if !slices.Contains(allowed, v) {
			return fmt.Errorf("%q is not a %s the agent allows (%s)", clip(v), what, strings.Join(allowed, ", "))
		}
		return nil
	}
}

func matching(re *regexp.Regexp, what string) func(string) error {
	return func(v string) error {
		if !re.MatchString(v) {
			return fmt.Errorf("%q is not %s", clip(v), what)
		}
		return nil
	}
}

// lvcreateFlags is what the agent lets lvmd.yaml give lvcreate: the layout of the one new
// volume (segment type, stripes, mirrors, region size, sync, allocation policy, read-ahead).
// Everything else is refused, because it could make lvcreate do something else than create
// that volume in its class's volume group: --name, --size, --extents (the agent's own),
// --snapshot, --thin*, --cache*, --vdo* (other volumes), --config, --profile,
// --commandprofile, --metadataprofile (lvm's configuration: devices, locking, activation),
// --zero n and --wipesignatures n (a new volume would show a removed volume's data),
// --addtag (tags are the caller's), --activate, --permission, --yes, --force, and
// positional arguments (physical volumes, or a volume group other than the class's).
var lvcreateFlags = []lvcreateFlag{
	{long: "type", value: oneOf("segment type", segmentTypes)},
	{long: "stripes", short: 'i', value: matching(countRE, "a stripe count (1 to 3 digits)")},
	{long: "stripesize", short: 'I', value: matching(sizeRE, "an lvm size such as 64k")},
	{long: "mirrors", short: 'm', value: matching(countRE, "a mirror count (1 to 3 digits)")},
	{long: "regionsize", short: 'R', value: matching(sizeRE, "an lvm size such as 512k")},
	{long: "nosync"},
	{long: "alloc", value: oneOf("allocation policy", allocPolicies)},
	{long: "readahead", short: 'r', value: func(v string) error {
		if v == "auto" || v == "none" || countRE.MatchString(v) || sizeRE.MatchString(v) {
			return nil
		}
		return fmt.Errorf("%q is not a read-ahead (auto, none or a number of sectors)", clip(v))
	}},
}

// AllowedLVCreateOptions lists the options ValidateLVCreateOptions accepts, for messages
// and the README.
func AllowedLVCreateOptions() string {
	names := make([]string, 0, len(lvcreateFlags))
	for _, f := range lvcreateFlags {
		n := "--" + f.long
		if f.short != 0 {
			n += "/-" + string(f.short)
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

// ValidateLVCreateOptions checks lvcreate arguments from lvmd.yaml (a device class's
// lvcreate-options or an option class's options) against lvcreateFlags; field names the
// list in errors ("device-classes[0].lvcreate-options").
func ValidateLVCreateOptions(field string, opts []string) []error {
	var errs []error
	for i := 0; i < len(opts); i++ {
		at := fmt.Sprintf("%s[%d]", field, i)
		o := opts[i]
		flag, value, attached, err := parseOption(o)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
			continue
		}
		if flag.value == nil {
			if attached {
				errs = append(errs, fmt.Errorf("%s: --%s takes no value", at, flag.long))
			}
			continue
		}
		if !attached {
			if i+1 == len(opts) {
				errs = append(errs, fmt.Errorf("%s: --%s needs a value (\"--%s=VALUE\", or VALUE as the next argument)", at, flag.long, flag.long))
				continue
			}
			i++
			value = opts[i]
		}
		if err := flag.value(value); err != nil {
			errs = append(errs, fmt.Errorf("%s: --%s: %w", at, flag.long, err))
		}
	}
	return errs
}

// parseOption finds the flag of one argument: "--name", "--name=value", "-x", "-xvalue".
func parseOption(o string) (f lvcreateFlag, value string, attached bool, err error) {
	refused := fmt.Errorf("%q is not an lvcreate option the agent passes on; allowed: %s", clip(o), AllowedLVCreateOptions())
	switch {
	case o == "" || strings.ContainsAny(o, "\x00\n"):
		return f, "", false, errors.New("must be a non-empty argument")
	case strings.HasPrefix(o, "--"):
		name, v, has := strings.Cut(o[2:], "=")
		for _, c := range lvcreateFlags {
			if c.long == name {
				return c, v, has, nil
			}
		}
	case len(o) >= 2 && o[0] == '-':
		for _, c := range lvcreateFlags {
			if c.short != 0 && c.short == o[1] {
				return c, o[2:], len(o) > 2, nil
			}
		}
	}
	return f, "", false, refused
}

// validateOptionClasses checks lvcreate-option-classes: named, unique, allowed options.
func validateOptionClasses(classes []*OptionClass) []error {
	var errs []error
	names := map[string]int{}
	for i, oc := range classes {
		field := fmt.Sprintf("lvcreate-option-classes[%d]", i)
		if oc == nil {
			errs = append(errs, fmt.Errorf("%s: is empty", field))
			continue
		}
		switch {
		case oc.Name == "":
			errs = append(errs, fmt.Errorf("%s.name: is required", field))
		case len(oc.Name) > MaxOptionClassNameLen || !optionClassNameRE.MatchString(oc.Name):
			errs = append(errs, fmt.Errorf("%s.name: %q is not an option class name: at most %d letters, digits and - _ . /, starting with a letter or digit",
				field, clip(oc.Name), MaxOptionClassNameLen))
		default:
			if j, dup := names[oc.Name]; dup {
				errs = append(errs, fmt.Errorf("%s.name: %q is also the name of lvcreate-option-classes[%d]", field, oc.Name, j))
			}
			names[oc.Name] = i
		}
		errs = append(errs, ValidateLVCreateOptions(field+".options", oc.Options)...)
	}
	return errs
}
