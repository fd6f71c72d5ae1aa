package backup

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/storage/compression"
)

// barmanInfo is a backup.info written by barman-cloud-backup 3.4 (Debian 12) for a
// PostgreSQL 15 server, plus a tablespace and a field from a newer barman.
const barmanInfo = `backup_label='START WAL LOCATION: 0/2000028 (file 000000010000000000000002)\nCHECKPOINT LOCATION: 0/2000060\nBACKUP METHOD: streamed\nBACKUP FROM: primary\nSTART TIME: 2026-11-21 07:29:26 UTC\nLABEL: Barman backup cloud 20261121T072923\nSTART TIMELINE: 1\n'
begin_offset=40
begin_time=2026-11-21 07:29:23.194515+00:00
begin_wal=000000010000000000000002
begin_xlog=0/2000028
compression=None
config_file=/tmp/bref/pg/postgresql.conf
copy_stats={'total_time': 10.422988, 'number_of_workers': 2, 'analysis_time': 0}
deduplicated_size=None
end_offset=256
end_time=2026-11-21 07:29:32.698888+00:00
end_wal=000000010000000000000002
end_xlog=0/2000100
error=None
hba_file=/tmp/bref/pg/pg_hba.conf
ident_file=/tmp/bref/pg/pg_ident.conf
included_files=None
mode=None
pgdata=/tmp/bref/pg
server_name=cloud
size=None
status=DONE
systemid=7710523527252092252
tablespaces=[('tbs one', 16385, '/srv/tbs\'1')]
timeline=1
version=150020
xlog_segment_size=16777216
cluster_size=12345
`

func TestDecodeBarmanInfo(t *testing.T) {
	in, err := DecodeInfo("20261121T072923", []byte(barmanInfo))
	if err != nil {
		t.Fatal(err)
	}
	if in.Status != StatusDone || in.BeginWAL != "000000010000000000000002" || in.EndLSN != 0x2000100 || in.Timeline != 1 ||
		in.SegmentSize != 16<<20 || in.Version != 150020 || in.SystemID != "7710523527252092252" || in.ServerName != "cloud" {
		t.Fatalf("decoded %+v", in)
	}
	if !strings.HasPrefix(in.Label, "START WAL LOCATION: 0/2000028 (file 000000010000000000000002)\nCHECKPOINT") {
		t.Fatalf("label %q", in.Label)
	}
	if want := time.Date(2026, 11, 21, 7, 29, 32, 698888000, time.UTC); !in.EndTime.Equal(want) {
		t.Fatalf("end time %v, want %v", in.EndTime, want)
	}
	if len(in.Tablespaces) != 1 || in.Tablespaces[0] != (Tablespace{Name: "tbs one", OID: 16385, Location: "/srv/tbs'1"}) {
		t.Fatalf("tablespaces %+v", in.Tablespaces)
	}
}

// TestInfoRoundTrip: what we write reads back the same, with barman's field set and order.
func TestInfoRoundTrip(t *testing.T) {
	in := &Info{
		ID: "20260102T030405", Name: "backup-x", Status: StatusDone, ServerName: "pg", Timeline: 3,
		BeginTime: time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC), EndTime: time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC),
		BeginLSN: 0x1_0000_0028, EndLSN: 0x1_0200_0100, BeginWAL: "000000030000000100000000", EndWAL: "000000030000000100000002",
		BeginOffset: 40, EndOffset: 256, Size: 1 << 30, Label: "START WAL LOCATION: 1/28 (file 000000030000000100000000)\nSTART TIMELINE: 3\n",
		PGData: "/pg", Tablespaces: []Tablespace{{Name: `it's "q"`, OID: 16400, Location: `/t\x`}},
		Version: 150020, SegmentSize: 16 << 20, SystemID: "123", Error: "first\nsecond", CopyTime: 1500 * time.Millisecond,
	}
	data := in.Encode()
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 29 || !strings.HasPrefix(lines[0], "backup_label=") || !strings.HasPrefix(lines[27], "xlog_segment_size=") ||
		lines[28] != "#plinth: size=1073741824" || !slices.Contains(lines, "size=None") {
		t.Fatalf("fields:\n%s", data)
	}
	out, err := DecodeInfo(in.ID, data)
	if err != nil {
		t.Fatal(err)
	}
	if out.Label != in.Label || out.Tablespaces[0] != in.Tablespaces[0] || !out.BeginTime.Equal(in.BeginTime) ||
		!out.EndTime.Equal(in.EndTime) || out.EndLSN != in.EndLSN || out.Error != "first" || out.Name != "backup-x" || out.Size != in.Size {
		t.Fatalf("round trip:\n%+v\n%+v", in, out)
	}
}

func TestPyRepr(t *testing.T) {
	for in, want := range map[string]string{
		"a\nb":      `'a\nb'`,
		`it's`:      `"it's"`,
		`'"`:        `'\'"'`,
		`back\sl`:   `'back\\sl'`,
		"tab\t\x01": `'tab\t\x01'`,
		"é€":        `'é€'`,
	} {
		if got := pyRepr(in); got != want {
			t.Errorf("pyRepr(%q) = %s, want %s", in, got, want)
		}
		if back, err := pyString(want); err != nil || back != in {
			t.Errorf("parse %s = %q %v", want, back, err)
		}
	}
	if _, err := pyParse("[('a', 1, 'b'),"); err == nil {
		t.Error("truncated list accepted")
	}
}

func TestLSNAndWALNames(t *testing.T) {
	l, err := ParseLSN("1/2000028")
	if err != nil || l != 0x1_0200_0028 || l.String() != "1/2000028" {
		t.Fatalf("%v %v", l, err)
	}
	for _, c := range []struct {
		tli  uint32
		lsn  LSN
		seg  int64
		want string
	}{
		{1, 0x2000028, 16 << 20, "000000010000000000000002"},
		{2, 0x1_FF00_0000, 16 << 20, "0000000200000001000000FF"},
		{1, 0x1_0000_0000, 1 << 30, "000000010000000100000000"},
		{1, 0x0_C000_0000, 1 << 30, "000000010000000000000003"},
	} {
		if got := WALFileName(c.tli, c.lsn, c.seg); got != c.want {
			t.Errorf("WALFileName(%d, %v, %d) = %s, want %s", c.tli, c.lsn, c.seg, got, c.want)
		}
	}
	from, to, tf, tt, err := segmentRange("0000000100000001000000FE", "000000020000000200000001", 16<<20)
	var names []string
	for n := from; n <= to; n++ {
		names = append(names, segmentName(tf, n, 16<<20))
	}
	if err != nil || tf != 1 || tt != 2 || strings.Join(names, " ") != "0000000100000001000000FE 0000000100000001000000FF 000000010000000200000000 000000010000000200000001" {
		t.Fatalf("%v %d %d %v", names, tf, tt, err)
	}
	if _, _, _, _, err := segmentRange("000000020000000000000005", "000000010000000000000006", 16<<20); err == nil {
		t.Fatal("a range going back a timeline was accepted")
	}
	if _, err := ParseLSN("x/1"); err == nil {
		t.Error("bad LSN accepted")
	}
}

func TestParseArchive(t *testing.T) {
	dir := "pg/base/20260101T000000/"
	for key, want := range map[string]Archive{
		dir + "data.tar.gz":        {Base: "data", Compression: compression.Gzip},
		dir + "data_0002.tar":      {Base: "data", Part: 2, Compression: compression.None},
		dir + "16385.tar.zst":      {Base: "16385", Compression: compression.Zstd},
		dir + "16385_0001.tar.bz2": {Base: "16385", Part: 1, Compression: compression.Bzip2},
		dir + "data.tar.snappy":    {Base: "data", Compression: compression.Snappy},
	} {
		got, ok := parseArchive(dir, key, 7)
		want.Key, want.Size = key, 7
		if !ok || got != want {
			t.Errorf("%s: %+v %v", key, got, ok)
		}
	}
	for _, key := range []string{dir + "backup.info", dir + "data.tar.lzo", dir + "x/data.tar", "other/data.tar"} {
		if _, ok := parseArchive(dir, key, 1); ok {
			t.Errorf("%s taken for an archive", key)
		}
	}
}
