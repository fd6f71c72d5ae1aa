package wal

import "encoding/binary"

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
