package wal

import (
	"encoding/binary"
	"testing"
)

func TestParseFileName(t *testing.T) {
	cases := []struct {
		name    string
		kind    Kind
		tli     uint32
		hashDir string
	}{
		{"000000010000000000000003", KindSegment, 1, "0000000100000000"},
		{"0000000A00000001000000FF", KindSegment, 10, "0000000A00000001"},
		{"00000002.history", KindHistory, 2, ""},
		{"000000010000000000000002.00000028.backup", KindBackup, 1, "0000000100000000"},
		{"000000010000000000000004.partial", KindPartial, 1, "0000000100000000"},
	}
	for _, c := range cases {
		f, err := ParseFileName(c.name)
		if err != nil || f.Kind != c.kind || f.Timeline != c.tli || f.HashDir() != c.hashDir {
			t.Errorf("%s: %+v hash %q %v", c.name, f, f.HashDir(), err)
		}
	}
	for _, bad := range []string{"", "00000001000000000000000", "000000010000000000000003.gz", "0000000100000000000000zz",
		"000000010000000000000003x", "00000002.History", "../000000010000000000000003", "RECOVERYXLOG"} {
		if _, err := ParseFileName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestNextSegment(t *testing.T) {
	cases := []struct {
		name    string
		segSize int64
		want    string
	}{
		{"000000010000000000000003", 16 << 20, "000000010000000000000004"},
		{"0000000100000000000000FF", 16 << 20, "000000010000000100000000"},
		{"0000000100000000000000FF", 0, "000000010000000100000000"}, // unknown size: 16 MiB
		{"000000020000000000000003", 1 << 30, "000000020000000100000000"},
		{"000000010000000000000FFF", 1 << 20, "000000010000000100000000"},
		{"0000000100000000000000FF", 1 << 20, "000000010000000000000100"},
	}
	for _, c := range cases {
		f, _ := ParseFileName(c.name)
		if got := f.Next(c.segSize).Name; got != c.want {
			t.Errorf("Next(%s, %d) = %s, want %s", c.name, c.segSize, got, c.want)
		}
	}
}

func TestParseHeader(t *testing.T) {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint16(b[2:4], 0x0002|0x0004)
	binary.LittleEndian.PutUint64(b[24:32], 7301234567890123456)
	binary.LittleEndian.PutUint32(b[32:36], 16<<20)
	h, ok := parseHeader(b)
	if !ok || h.SystemID != 7301234567890123456 || h.SegmentSize != 16<<20 {
		t.Fatalf("%+v %v", h, ok)
	}
	binary.LittleEndian.PutUint16(b[2:4], 0x0001) // a short header: not a segment's first page
	if _, ok := parseHeader(b); ok {
		t.Fatal("short header parsed")
	}
	if _, ok := parseHeader([]byte("1\t0/3000000\tno recovery target\n")); ok {
		t.Fatal("a history file parsed as a segment")
	}
}
