package lvm

import (
	"errors"
	"strings"
	"testing"
)

// Captured from lvm2 2.03.16 in metadata-only mode.
const (
	vgsOut = `  {
      "report": [
          {
              "vg": [
                  {"vg_name":"tryvg", "vg_size":"2143289344", "vg_free":"1069547520", "vg_extent_size":"4194304", "vg_extent_count":"511", "vg_free_count":"255"}
              ]
          }
      ]
  }`
	lvsOut = `{"report":[{"lv":[{"lv_name":"lv1","lv_size":"1073741824","lv_tags":"a,b=c","lv_kernel_major":"-1","lv_kernel_minor":"-1","lv_attr":"-wi-XX----","lv_path":"/dev/tryvg/lv1"},
		{"lv_name":"pool","lv_size":"4194304","lv_tags":"","lv_kernel_major":"253","lv_kernel_minor":"4","lv_attr":"twi-a-tz--","lv_path":"","pool_lv":"","origin":"","data_percent":"12.50","metadata_percent":"10.84"},
		{"lv_name":"thin1","lv_size":"104857600","lv_tags":"","lv_kernel_major":"253","lv_kernel_minor":"6","lv_attr":"Vwi-a-tz--","lv_path":"/dev/tryvg/thin1","pool_lv":"pool","origin":"","data_percent":"0.00","metadata_percent":""},
		{"lv_name":"snap1","lv_size":"104857600","lv_tags":"","lv_kernel_major":"253","lv_kernel_minor":"7","lv_attr":"Vri-a-tz--","lv_path":"/dev/tryvg/snap1","pool_lv":"pool","origin":"thin1","data_percent":"0.00","metadata_percent":""}]}]}`
	segOut = `{"report":[{"lv":[
		{"lv_name":"lv1","segtype":"linear","seg_start_pe":"0","seg_size_pe":"256","seg_pe_ranges":"/dev/loop0:0-255","stripes":"1","stripe_size":"0"},
		{"lv_name":"lv1","segtype":"linear","seg_start_pe":"256","seg_size_pe":"44","seg_pe_ranges":"/dev/loop0:288-331","stripes":"1","stripe_size":"0"}]}]}`
	stripedOut = `{"report":[{"lv":[{"lv_name":"lv2","segtype":"striped","seg_start_pe":"0","seg_size_pe":"64","seg_pe_ranges":"/dev/loop0:256-287 /dev/loop1:0-31","stripes":"2","stripe_size":"65536"}]}]}`
	// json_std prints numbers as numbers.
	vgsStd = `{"report":[{"vg":[{"vg_name":"v","vg_size":8388608,"vg_free":4194304,"vg_extent_size":4194304,"vg_extent_count":2,"vg_free_count":1}]}]}`
)

func TestParseReports(t *testing.T) {
	vgs, err := parseVGs([]byte(vgsOut))
	if err != nil || len(vgs) != 1 || vgs[0] != (VGInfo{Name: "tryvg", Size: 2143289344, Free: 1069547520, ExtentSize: 4 << 20, ExtentCount: 511, FreeExtents: 255}) {
		t.Fatalf("vgs %+v %v", vgs, err)
	}
	if vgs, err := parseVGs([]byte(vgsStd)); err != nil || vgs[0].Free != 4<<20 {
		t.Fatalf("json_std %+v %v", vgs, err)
	}
	lvs, err := parseLVs([]byte(lvsOut))
	if err != nil || len(lvs) != 4 {
		t.Fatalf("lvs %+v %v", lvs, err)
	}
	if lv := lvs[0]; lv.Major != 0 || lv.Minor != 0 || len(lv.Tags) != 2 || lv.Tags[1] != "b=c" || lv.IsThinPool() {
		t.Fatalf("lv %+v", lv)
	}
	if lv := lvs[1]; lv.Major != 253 || lv.Minor != 4 || lv.Tags != nil || !lv.IsThinPool() || lv.IsThin() ||
		lv.DataPercent != 12.5 || lv.MetadataPercent != 10.84 {
		t.Fatalf("pool %+v", lv)
	}
	if lv := lvs[2]; !lv.IsThin() || lv.Pool != "pool" || lv.Origin != "" || lv.IsThinPool() || lvs[0].IsThin() {
		t.Fatalf("thin volume %+v", lv)
	}
	if lv := lvs[3]; !lv.IsThin() || lv.Origin != "thin1" || lv.Attr[1] != 'r' {
		t.Fatalf("thin snapshot %+v", lv)
	}
	for _, bad := range []string{`"-1"`, `"100.01"`, `"NaN"`, `"x"`} {
		garbled := strings.Replace(lvsOut, `"12.50"`, bad, 1)
		if _, err := parseLVs([]byte(garbled)); err == nil || !strings.Contains(err.Error(), "data_percent") {
			t.Errorf("data_percent %s: %v, want it refused", bad, err)
		}
	}
	segs, err := parseSegments([]byte(segOut))
	if err != nil || len(segs) != 2 || segs[1].Areas[0] != (Area{PV: "/dev/loop0", FirstExtent: 288, Extents: 44}) {
		t.Fatalf("segments %+v %v", segs, err)
	}
	striped, err := parseSegments([]byte(stripedOut))
	if err != nil || len(striped[0].Areas) != 2 || striped[0].Areas[1] != (Area{PV: "/dev/loop1", Extents: 32}) {
		t.Fatalf("striped %+v %v", striped, err)
	}
	for _, bad := range []string{
		``, `[]`, `{"report":{}}`, `{}`,
		`{"report":[{"vg":[{"vg_name":"x","vg_size":"-1","vg_free":"0","vg_extent_size":"4","vg_extent_count":"1","vg_free_count":"0"}]}]}`,
		`{"report":[{"vg":[{"vg_name":"x","vg_size":"8","vg_free":"9","vg_extent_size":"4","vg_extent_count":"2","vg_free_count":"2"}]}]}`,
		`{"report":[{"vg":[{"vg_size":"8","vg_free":"4","vg_extent_size":"4","vg_extent_count":"2","vg_free_count":"1"}]}]}`,
	} {
		if _, err := parseVGs([]byte(bad)); err == nil {
			t.Errorf("parseVGs(%q) accepted garbage", bad)
		}
	}
	if _, err := parseSegments([]byte(strings.Replace(stripedOut, `"stripes":"2"`, `"stripes":"3"`, 1))); err == nil {
		t.Error("a stripe count that disagrees with the ranges must be refused")
	}
}

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		stderr string
		want   error
	}{
		{`  Volume group "tryvg" has insufficient free space (402 extents): 25600 required.`, ErrNoSpace},
		{`  Insufficient suitable allocatable extents for logical volume x: 10 more required`, ErrNoSpace},
		{`  Logical Volume "lv1" already exists in volume group "tryvg"`, ErrExists},
		{`  Volume group "nope" not found` + "\n" + `  Cannot process volume group nope`, ErrVGNotFound},
		{`  Failed to find logical volume "tryvg/nope"`, ErrLVNotFound},
		{`  Logical volume nope not found in volume group tryvg.`, ErrLVNotFound},
		{`  Pool nopool not found in Volume group plinthtest_21eef255fa4f.`, ErrLVNotFound},             // lvcreate -T vg/nopool (2.03.16)
		{`  Snapshot origin LV nope not found in Volume group plinthtest_22d417d497cf.`, ErrLVNotFound}, // lvcreate -s vg/nope
		{`  Invalid stripe size 3.00 KiB.`, ErrInvalid},
		{`  lvcreate: unrecognized option '--bogus'`, ErrInvalid},
		{`  Some other disaster.`, ErrFailed},
	} {
		if got := classify(tt.stderr); got != tt.want {
			t.Errorf("classify(%q) = %v, want %v", tt.stderr, got, tt.want)
		}
	}
	d := detail("  WARNING: Activation disabled. No device-mapper interaction will be attempted.\n  Volume group \"x\" not found\n\n  Cannot process volume group x\n")
	if d != `Volume group "x" not found; Cannot process volume group x` {
		t.Errorf("detail %q", d)
	}
	if d := detail(strings.Repeat("x", 10000)); len(d) > maxDetail+4 {
		t.Errorf("detail is %d bytes", len(d))
	}
	err := error(&Error{Kind: ErrNoSpace, Command: "lvcreate", ExitCode: 5})
	if !errors.Is(err, ErrNoSpace) || errors.Is(err, ErrExists) {
		t.Error("Error must unwrap to its kind only")
	}
}

func TestLayoutLocate(t *testing.T) {
	const ext = 4 << 20
	pvs := []PV{{Name: "/dev/a", PEStart: 1 << 20}, {Name: "/dev/b", PEStart: 2 << 20}}
	// Two linear segments, then a striped one over both devices.
	segs := []Segment{
		{Type: "linear", StartExtent: 0, Extents: 2, Areas: []Area{{PV: "/dev/a", FirstExtent: 10, Extents: 2}}},
		{Type: "striped", StartExtent: 3, Extents: 4, StripeSize: 64 << 10, Areas: []Area{{PV: "/dev/a", FirstExtent: 0, Extents: 2}, {PV: "/dev/b", FirstExtent: 5, Extents: 2}}},
		{Type: "linear", StartExtent: 2, Extents: 1, Areas: []Area{{PV: "/dev/b", FirstExtent: 0, Extents: 1}}},
	}
	l, err := NewLayout(segs, pvs, ext)
	if err != nil {
		t.Fatal(err)
	}
	if l.Size != 7*ext {
		t.Fatalf("size %d", l.Size)
	}
	for _, tt := range []struct {
		off  uint64
		dev  string
		at   uint64
		runs uint64
	}{
		{0, "/dev/a", 1<<20 + 10*ext, 2 * ext},
		{2*ext - 1, "/dev/a", 1<<20 + 12*ext - 1, 1},
		{2 * ext, "/dev/b", 2 << 20, ext},
		{3 * ext, "/dev/a", 1 << 20, 64 << 10},                          // stripe 0, row 0
		{3*ext + 64<<10, "/dev/b", 2<<20 + 5*ext, 64 << 10},             // stripe 1, row 0
		{3*ext + 128<<10 + 7, "/dev/a", 1<<20 + 64<<10 + 7, 64<<10 - 7}, // stripe 0, row 1
		{7*ext - 1, "/dev/b", 2<<20 + 7*ext - 1, 1},                     // the last byte
	} {
		dev, at, n := l.Locate(tt.off)
		if dev != tt.dev || at != tt.at || n != tt.runs {
			t.Errorf("Locate(%d) = %s %d %d, want %s %d %d", tt.off, dev, at, n, tt.dev, tt.at, tt.runs)
		}
	}
	for _, bad := range [][]Segment{
		{{Type: "raid1", StartExtent: 0, Extents: 1, Areas: []Area{{PV: "/dev/a", Extents: 1}}}},
		{{Type: "linear", StartExtent: 1, Extents: 1, Areas: []Area{{PV: "/dev/a", Extents: 1}}}},
		{{Type: "linear", StartExtent: 0, Extents: 1, Areas: []Area{{PV: "/dev/zzz", Extents: 1}}}},
		{{Type: "striped", StartExtent: 0, Extents: 2, StripeSize: 3 << 20, Areas: []Area{{PV: "/dev/a", Extents: 1}, {PV: "/dev/b", Extents: 1}}}},
		nil,
	} {
		if _, err := NewLayout(bad, pvs, ext); err == nil {
			t.Errorf("NewLayout(%+v) accepted it", bad)
		}
	}
	if _, err := NewLayout(segs[:1], pvs, ext); err != nil {
		t.Error(err)
	}
	_, err = NewLayout([]Segment{{Type: "raid5", Extents: 1, Areas: []Area{{PV: "/dev/a", Extents: 1}}}}, pvs, ext)
	if !errors.Is(err, ErrUnsupportedLayout) {
		t.Errorf("raid: %v", err)
	}
}
