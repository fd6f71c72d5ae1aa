// Package waltest makes WAL segments for tests: random content behind the long page header
// PostgreSQL writes at a segment's start, so that the plugin's checks (size, header, address,
// system identifier) see a real segment.
package waltest

import (
	"crypto/rand"
	"encoding/binary"
	"strconv"
	"strings"
)

// Size is the segment size the tests use: 1 MiB, the smallest valid wal_segment_size.
const Size = 1 << 20

// Segment returns a Size-byte segment of PostgreSQL 15 (page magic 0xD110) on timeline 1
// for sysID, addressed for name (a segment or .partial name; "" leaves the address zero, to
// be set by Address once the name is known).
func Segment(name string, sysID uint64) []byte {
	b := make([]byte, Size)
	_, _ = rand.Read(b[64:])
	binary.LittleEndian.PutUint16(b[0:2], 0xD110)
	binary.LittleEndian.PutUint16(b[2:4], 0x0002) // XLP_LONG_HEADER
	binary.LittleEndian.PutUint32(b[4:8], 1)
	binary.LittleEndian.PutUint64(b[24:32], sysID)
	binary.LittleEndian.PutUint32(b[32:36], Size)
	binary.LittleEndian.PutUint32(b[36:40], 8192)
	return Address(name, b)
}

// Address sets, in place, the page address of a segment's header to the one name says
// (segment or .partial names; anything else, or data without a long header, is left as is),
// and returns data.
func Address(name string, data []byte) []byte {
	name = strings.TrimSuffix(name, ".partial")
	if len(name) != 24 || len(data) < 40 || binary.LittleEndian.Uint16(data[2:4])&2 == 0 {
		return data
	}
	log, err1 := strconv.ParseUint(name[8:16], 16, 32)
	seg, err2 := strconv.ParseUint(name[16:24], 16, 32)
	size := uint64(binary.LittleEndian.Uint32(data[32:36]))
	if err1 != nil || err2 != nil || size == 0 {
		return data
	}
	binary.LittleEndian.PutUint64(data[8:16], (log*(1<<32/size)+seg)*size)
	return data
}
