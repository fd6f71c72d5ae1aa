package volume

import (
	"errors"
	"fmt"
	"strings"
)

// MaxNameLen is the longest logical volume name lvm accepts (NAME_LEN less the NUL).
const MaxNameLen = 127

// MaxPathLen is the longest "vg/lv" lvcreate accepts: its count adds two bytes to the path and
// must stay below NAME_LEN (128), so a path of 126 bytes is answered "Internal error: LV name
// ... length 128 is not supported" (measured with lvm2 2.03 on volume groups of 6 and 23
// bytes). On a volume group of N bytes a volume's name has at most MaxPathLen-N-1 bytes: 118
// on make up's "plinth".
const MaxPathLen = 125

// checkPathLen refuses name when "vg/name" is longer than lvm takes.
func checkPathLen(vg, name string) error {
	if most := MaxPathLen - len(vg) - 1; len(name) > most {
		return &NameTooLongError{Len: len(name), Max: most, VolumeGroup: vg}
	}
	return nil
}

// MaxTagLen is lvm's limit on one tag.
const MaxTagLen = 1024

// reservedParts are lvm's own sub-volume markers: a name containing one is refused by
// lvcreate (lib/misc/lvm-string.c), so the agent refuses it first, with a clear message.
var reservedParts = []string{"_cdata", "_cmeta", "_corig", "_iorig", "_imeta", "_mimage", "_mlog", "_pmspare",
	"_rimage", "_rmeta", "_tdata", "_tmeta", "_vdata", "_vorigin", "_wcorig"}

// ValidateName checks lvm's rules for a logical volume name (and keeps the agent's own
// snapshot names for the agent).
func ValidateName(name string) error {
	switch {
	case name == "":
		return errors.New("is required")
	case len(name) > MaxNameLen:
		return fmt.Errorf("is %d bytes; lvm allows at most %d", len(name), MaxNameLen)
	case name == "." || name == ".." || name[0] == '-':
		return errors.New("must not be \".\", \"..\" or start with \"-\"")
	case strings.HasPrefix(name, "snapshot") || strings.HasPrefix(name, "pvmove"):
		return errors.New("must not start with \"snapshot\" or \"pvmove\" (reserved by lvm)")
	case IsSnapshotName(name):
		return fmt.Errorf("must not start with %q (reserved for the agent's backup snapshots)", SnapshotPrefix)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isNameChar(c) {
			return fmt.Errorf("may only contain letters, digits and + _ . - (byte %d is %q)", i, rune(c))
		}
	}
	for _, r := range reservedParts {
		if strings.Contains(name, r) {
			return fmt.Errorf("must not contain %q (reserved by lvm)", r)
		}
	}
	return nil
}

func isNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("+_.-", c) >= 0
}

// ValidateTag checks lvm's rules for a tag: letters, digits and _ + . - / = ! : & #.
func ValidateTag(tag string) error {
	switch {
	case tag == "":
		return errors.New("must not be empty")
	case len(tag) > MaxTagLen:
		return fmt.Errorf("is %d bytes; lvm allows at most %d", len(tag), MaxTagLen)
	}
	for i := 0; i < len(tag); i++ {
		if c := tag[i]; !isNameChar(c) && strings.IndexByte("/=!:&#", c) < 0 {
			return fmt.Errorf("may only contain letters, digits and _ + . - / = ! : & # (byte %d is %q)", i, rune(c))
		}
	}
	return nil
}

// SnapshotPrefix names the short-lived snapshots a backup reads from (with device-mapper);
// listings leave them out, and a restart removes ones a crash left behind.
const SnapshotPrefix = "plinthsnap-"

// IsSnapshotName reports whether a volume is one of the agent's backup snapshots.
func IsSnapshotName(name string) bool { return strings.HasPrefix(name, SnapshotPrefix) }
