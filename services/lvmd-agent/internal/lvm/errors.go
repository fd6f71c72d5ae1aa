package lvm

import (
	"errors"
	"fmt"
	"strings"
)

// Classified failures of lvm commands. Callers test with errors.Is; the *Error that wraps
// one keeps lvm's own words for the log, and they never reach a client.
var (
	// ErrNoSpace: the volume group has too few free extents.
	ErrNoSpace = errors.New("not enough free space in the volume group")
	// ErrLVNotFound: no such logical volume.
	ErrLVNotFound = errors.New("logical volume not found")
	// ErrVGNotFound: no such volume group.
	ErrVGNotFound = errors.New("volume group not found")
	// ErrExists: a logical volume of that name exists already.
	ErrExists = errors.New("logical volume already exists")
	// ErrInvalid: lvm refused the arguments (a bad name, size or option).
	ErrInvalid = errors.New("lvm refused the arguments")
	// ErrTimeout: the command did not finish within its deadline and was killed.
	ErrTimeout = errors.New("lvm command timed out")
	// ErrFailed: anything else (the message in the log says what).
	ErrFailed = errors.New("lvm command failed")
)

// Error is a failed lvm command.
type Error struct {
	// Kind is one of the Err* values above.
	Kind error
	// Command is the lvm subcommand, e.g. "lvcreate".
	Command string
	// ExitCode is lvm's exit status (-1 when it did not exit by itself).
	ExitCode int
	// Detail is lvm's message (stderr without its warnings), bounded.
	Detail string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("lvm %s: %v (exit %d)", e.Command, e.Kind, e.ExitCode)
	}
	return fmt.Sprintf("lvm %s: %v (exit %d): %s", e.Command, e.Kind, e.ExitCode, e.Detail)
}

// Unwrap lets errors.Is(err, ErrNoSpace) and friends see the kind.
func (e *Error) Unwrap() error { return e.Kind }

// classify picks the kind for lvm's stderr (LC_ALL=C). The texts are lvm2's own
// (lib/metadata/lv_manip.c, tools/toollib.c, lib/metadata/metadata.c); the order matters:
// "Volume group "x" not found" must not read as a missing logical volume.
func classify(stderr string) error {
	s := strings.ToLower(stderr)
	switch {
	case containsAny(s, "insufficient free space", "insufficient suitable allocatable extents", "insufficient free extents"):
		return ErrNoSpace
	case strings.Contains(s, "already exists in volume group"):
		return ErrExists
	case strings.Contains(s, "volume group \"") && strings.Contains(s, "not found"):
		return ErrVGNotFound
	case strings.Contains(s, "failed to find logical volume"),
		strings.Contains(s, "logical volume") && strings.Contains(s, "not found"),
		strings.Contains(s, "not found in volume group"): // a pool or a snapshot's origin
		return ErrLVNotFound
	case containsAny(s, "invalid argument", "unrecognised option", "unrecognized option", "is reserved",
		"name is invalid", "invalid stripe size", "invalid ", "number of stripes", "please specify"):
		return ErrInvalid
	}
	return ErrFailed
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// maxDetail bounds the lvm message kept in an Error.
const maxDetail = 512

// detail is stderr without lvm's warnings and blank lines, on one line, bounded: what the
// log needs to say why.
func detail(stderr string) string {
	var kept []string
	for line := range strings.SplitSeq(stderr, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "WARNING:") || strings.HasPrefix(line, "File descriptor") {
			continue
		}
		kept = append(kept, line)
	}
	d := strings.Join(kept, "; ")
	if len(d) > maxDetail {
		d = d[:maxDetail] + "…"
	}
	return d
}
