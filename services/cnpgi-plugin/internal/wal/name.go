package wal

import (
	"github.com/plinth-dev/plinth/libs/platform/input"

	"fmt"
	"regexp"
	"strconv"
)

// Kind is what a file in pg_wal (and so in the archive) is.
type Kind string

// The kinds of files PostgreSQL archives and restores.
const (
	// KindSegment is a WAL segment, 000000010000000000000003.
	KindSegment Kind = "segment"
	// KindHistory is a timeline history file, 00000002.history.
	KindHistory Kind = "history"
	// KindBackup is a backup history file, 000000010000000000000002.00000028.backup.
	KindBackup Kind = "backup"
	// KindPartial is the last, incomplete segment of an old timeline after a promotion.
	KindPartial Kind = "partial"
)

// Limits of what clients send, checked before any work.
const (
	// MaxPathLen bounds archive sources and restore destinations (PATH_MAX).
	MaxPathLen = 4096
	// MaxNameLen bounds WAL file names (the longest, a .backup file, is 40 bytes).
	MaxNameLen = 64
)

// FileName is a parsed WAL file name.
type FileName struct {
	// Name is the file name as PostgreSQL writes it (upper-case hex).
	Name string
	// Kind says which of the four forms Name has.
	Kind Kind
	// Timeline is the timeline id.
	Timeline uint32
	// Log and Seg are the two halves of the segment number; zero for history files.
	Log, Seg uint32
}

var namePatterns = []struct {
	kind Kind
	re   *regexp.Regexp
}{
	{KindSegment, regexp.MustCompile(`^([0-9A-F]{8})([0-9A-F]{8})([0-9A-F]{8})$`)},
	{KindHistory, regexp.MustCompile(`^([0-9A-F]{8})\.history$`)},
	{KindBackup, regexp.MustCompile(`^([0-9A-F]{8})([0-9A-F]{8})([0-9A-F]{8})\.[0-9A-F]{8}\.backup$`)},
	{KindPartial, regexp.MustCompile(`^([0-9A-F]{8})([0-9A-F]{8})([0-9A-F]{8})\.partial$`)},
}

// ParseFileName accepts the names PostgreSQL passes to archive_command and restore_command.
func ParseFileName(name string) (FileName, error) {
	for _, p := range namePatterns {
		m := p.re.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		f := FileName{Name: name, Kind: p.kind, Timeline: hex32(m[1])}
		if len(m) > 2 {
			f.Log, f.Seg = hex32(m[2]), hex32(m[3])
		}
		return f, nil
	}
	return FileName{}, fmt.Errorf("%s is not a WAL segment, .history, .backup or .partial file name", input.Quote(name))
}

func hex32(s string) uint32 {
	v, _ := strconv.ParseUint(s, 16, 32) // the patterns allow exactly 8 hex digits
	return uint32(v)
}

// HashDir is barman-cloud's directory for the file: the timeline and log halves of the
// name ("0000000100000000"), or "" for history files, which sit directly in wals/.
func (f FileName) HashDir() string {
	if f.Kind == KindHistory {
		return ""
	}
	return f.Name[:16]
}

// DefaultSegmentSize is PostgreSQL's default wal_segment_size.
const DefaultSegmentSize = 16 << 20

// Next returns the segment after f for segments of segSize bytes (a power of two from
// 1 MiB to 1 GiB; anything else means the 16 MiB default). Only meaningful for KindSegment.
func (f FileName) Next(segSize int64) FileName {
	if !ValidSegmentSize(segSize) {
		segSize = DefaultSegmentSize
	}
	perLog := uint32((int64(1) << 32) / segSize)
	n := FileName{Kind: KindSegment, Timeline: f.Timeline, Log: f.Log, Seg: f.Seg + 1}
	if n.Seg >= perLog {
		n.Log, n.Seg = n.Log+1, 0
	}
	n.Name = fmt.Sprintf("%08X%08X%08X", n.Timeline, n.Log, n.Seg)
	return n
}
