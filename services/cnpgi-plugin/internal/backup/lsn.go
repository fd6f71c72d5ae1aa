package backup

import (
	"github.com/plinth-dev/plinth/libs/platform/input"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"

	"fmt"
	"strconv"
	"strings"
)

// LSN is a PostgreSQL write-ahead log location ("0/2000028" in text form).
type LSN uint64

// ParseLSN reads PostgreSQL's text form of an LSN: two hexadecimal halves separated by "/".
func ParseLSN(s string) (LSN, error) {
	hi, lo, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, fmt.Errorf("%s is not an LSN (want X/Y in hexadecimal)", input.Quote(s))
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%s is not an LSN (want X/Y in hexadecimal)", input.Quote(s))
	}
	return LSN(h<<32 | l), nil
}

// String prints the LSN as PostgreSQL does.
func (l LSN) String() string { return fmt.Sprintf("%X/%X", uint64(l)>>32, uint64(l)&0xFFFFFFFF) }

// validSegmentSize reports whether n is a wal_segment_size PostgreSQL accepts.
func validSegmentSize(n int64) bool { return wal.ValidSegmentSize(n) }

// WALFileName is the name of the segment of timeline tli holding lsn, for segments of
// segSize bytes (000000010000000000000002 for 0/2000028 on timeline 1 with 16 MiB).
func WALFileName(tli uint32, lsn LSN, segSize int64) string {
	if !validSegmentSize(segSize) {
		segSize = 16 << 20
	}
	segNo := uint64(lsn) / uint64(segSize)
	perLog := uint64(1<<32) / uint64(segSize)
	return fmt.Sprintf("%08X%08X%08X", tli, segNo/perLog, segNo%perLog)
}

// segmentPosition is a segment's place in the WAL of any timeline: comparing positions
// orders segments regardless of the timeline in their names.
func segmentPosition(name string) (tli uint32, pos uint64, ok bool) {
	if len(name) < 24 {
		return 0, 0, false
	}
	t, err1 := strconv.ParseUint(name[0:8], 16, 32)
	log, err2 := strconv.ParseUint(name[8:16], 16, 32)
	seg, err3 := strconv.ParseUint(name[16:24], 16, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return uint32(t), log<<32 | seg, true
}
