package lvm

import (
	"testing"
)

// FuzzReports feeds arbitrary bytes to every report decoder and the layout built from what
// they accept: no input may panic, and whatever is accepted must be self-consistent.
func FuzzReports(f *testing.F) {
	for _, s := range []string{vgsOut, vgsStd, lvsOut, segOut, stripedOut, `{"report":[]}`, `{"report":[{"vg":[{}]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if vgs, err := parseVGs(data); err == nil {
			for _, v := range vgs {
				if v.Name == "" || v.ExtentSize == 0 || v.Free > v.Size {
					t.Fatalf("accepted an inconsistent VG %+v", v)
				}
			}
		}
		if lvs, err := parseLVs(data); err == nil {
			for _, lv := range lvs {
				if lv.Name == "" {
					t.Fatalf("accepted a volume without a name")
				}
			}
		}
		_, _ = parsePVs(data)
		segs, err := parseSegments(data)
		if err != nil {
			return
		}
		pvs := []PV{}
		for _, s := range segs {
			for _, a := range s.Areas {
				pvs = append(pvs, PV{Name: a.PV, PEStart: 1 << 20})
			}
		}
		l, err := NewLayout(segs, pvs, 4<<20)
		if err != nil || l.Size == 0 {
			return
		}
		for _, off := range []uint64{0, l.Size / 2, l.Size - 1} {
			if _, _, n := l.Locate(off); n == 0 || n > l.Size-off {
				t.Fatalf("Locate(%d) gave a run of %d in a volume of %d", off, n, l.Size)
			}
		}
	})
}
