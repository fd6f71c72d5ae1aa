package wal

import (
	"encoding/binary"
	"fmt"
)

// The first page of every WAL segment starts with XLogLongPageHeaderData: the short header
// (xlp_magic uint16, xlp_info uint16, xlp_tli uint32, xlp_pageaddr uint64, xlp_rem_len
// uint32, padded to 24 bytes), then xlp_sysid uint64, xlp_seg_size uint32, xlp_xlog_blcksz
// uint32. PostgreSQL writes it in the host's byte order; every platform CloudNativePG runs
// on is little-endian.
const (
	longHeaderSize = 40
	xlpLongHeader  = 0x0002 // xlp_info flag
)

// segmentHeader is what the archiver reads from a segment's long page header.
type segmentHeader struct {
	SystemID    uint64
	SegmentSize uint32
}

// parseHeader reads the long page header; ok is false when b does not start with one
// (history files, truncated or foreign files).
func parseHeader(b []byte) (segmentHeader, bool) {
	if len(b) < longHeaderSize {
		return segmentHeader{}, false
	}
	info := binary.LittleEndian.Uint16(b[2:4])
	if info&xlpLongHeader == 0 {
		return segmentHeader{}, false
	}
	h := segmentHeader{SystemID: binary.LittleEndian.Uint64(b[24:32]), SegmentSize: binary.LittleEndian.Uint32(b[32:36])}
	if h.SystemID == 0 {
		return segmentHeader{}, false
	}
	return h, true
}

// ValidSegmentSize reports whether n is a wal_segment_size PostgreSQL accepts: a power of
// two from 1 MiB to 1 GiB.
func ValidSegmentSize(n int64) bool { return n >= 1<<20 && n <= 1<<30 && n&(n-1) == 0 }

// segmentProblem says why a file of size bytes starting with head is not the WAL segment fn
// names (a segment or a .partial), or "" when it is: a valid wal_segment_size, and a long
// page header from PostgreSQL (XLOG page magic) for this segment's address, with the system
// identifier, the same segment size and a valid block size.
func segmentProblem(fn FileName, size int64, head []byte) string {
	if !ValidSegmentSize(size) {
		return fmt.Sprintf("it is %d bytes, not a WAL segment (a power of two from 1 MiB to 1 GiB)", size)
	}
	if len(head) < longHeaderSize {
		return "it is too short for a WAL page header"
	}
	magic := binary.LittleEndian.Uint16(head[0:2])
	info := binary.LittleEndian.Uint16(head[2:4])
	pageAddr := binary.LittleEndian.Uint64(head[8:16])
	h, ok := parseHeader(head)
	perLog := uint64(1<<32) / uint64(size)
	want := (uint64(fn.Log)*perLog + uint64(fn.Seg)) * uint64(size)
	blk := binary.LittleEndian.Uint32(head[36:40])
	switch {
	case magic>>8 != 0xD0 && magic>>8 != 0xD1:
		return fmt.Sprintf("its first page has no WAL page header (magic %#04x)", magic)
	case info&xlpLongHeader == 0 || !ok:
		return "its first page lacks the long WAL page header of a segment's start"
	case uint64(h.SegmentSize) != uint64(size):
		return fmt.Sprintf("its header says wal_segment_size %d but the file is %d bytes", h.SegmentSize, size)
	case pageAddr != want:
		return fmt.Sprintf("its header is for WAL position %X/%X, not for segment %s", pageAddr>>32, uint32(pageAddr), fn.Name[:24])
	case blk < 1024 || blk > 65536 || blk&(blk-1) != 0:
		return fmt.Sprintf("its header has an invalid block size %d", blk)
	}
	return ""
}
