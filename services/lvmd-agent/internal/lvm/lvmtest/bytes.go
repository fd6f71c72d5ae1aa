package lvmtest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The byte access below is deliberately independent of the agent's lvm.Layout: it reads
// lvm's plain-text report and maps linear segments itself (the reference's dd recipe), so a
// mistake in the agent's mapping cannot hide behind the same mistake in the test.

// piece is a run of a volume's bytes on one device.
type piece struct {
	start, length int64 // logical bytes
	device        string
	offset        int64 // bytes on the device
}

// pieces maps a linear volume; the test fails on striped segments.
func (v *VG) pieces(t testing.TB, lv string) []piece {
	t.Helper()
	extent := v.atoi(t, v.Lvm(t, "vgs", "--noheadings", "--units", "b", "--nosuffix", "-o", "vg_extent_size", v.Name))
	peStart := map[string]int64{}
	for _, line := range strings.Split(v.Lvm(t, "pvs", "--noheadings", "--separator", ";", "--units", "b", "--nosuffix", "-o", "pv_name,pe_start"), "\n") {
		f := strings.Split(strings.TrimSpace(line), ";")
		if len(f) == 2 {
			peStart[f[0]] = v.atoi(t, f[1])
		}
	}
	var out []piece
	for _, line := range strings.Split(v.Lvm(t, "lvs", "--noheadings", "--separator", ";", "-o", "seg_start_pe,seg_size_pe,seg_pe_ranges,stripes", v.Name+"/"+lv), "\n") {
		f := strings.Split(strings.TrimSpace(line), ";")
		if len(f) != 4 {
			t.Fatalf("unexpected segment line %q", line)
		}
		if f[3] != "1" {
			t.Fatalf("lvmtest reads linear volumes only; %s has %s stripes", lv, f[3])
		}
		dev, rng, _ := strings.Cut(f[2], ":")
		first, _, _ := strings.Cut(rng, "-")
		out = append(out, piece{
			start:  v.atoi(t, f[0]) * extent,
			length: v.atoi(t, f[1]) * extent,
			device: dev,
			offset: peStart[dev] + v.atoi(t, first)*extent,
		})
	}
	return out
}

func (v *VG) atoi(t testing.TB, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		t.Fatalf("lvm printed %q where a number belongs", s)
	}
	return n
}

// access reads or writes p at the volume's logical offset off.
func (v *VG) access(t testing.TB, lv string, off int64, p []byte, write bool) {
	t.Helper()
	accessPieces(t, v.pieces(t, lv), off, p, write)
}

func accessPieces(t testing.TB, pieces []piece, off int64, p []byte, write bool) {
	t.Helper()
	for _, pc := range pieces {
		lo, hi := max(off, pc.start), min(off+int64(len(p)), pc.start+pc.length)
		if lo >= hi {
			continue
		}
		flag := os.O_RDONLY
		if write {
			flag = os.O_WRONLY
		}
		f, err := os.OpenFile(pc.device, flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		buf := p[lo-off : hi-off]
		at := pc.offset + lo - pc.start
		if write {
			_, err = f.WriteAt(buf, at)
		} else {
			_, err = f.ReadAt(buf, at)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// WriteLV writes data into volume lv at byte offset off.
func (v *VG) WriteLV(t testing.TB, lv string, off int64, data []byte) {
	t.Helper()
	v.access(t, lv, off, data, true)
}

// ReadLV reads n bytes of volume lv from byte offset off.
func (v *VG) ReadLV(t testing.TB, lv string, off int64, n int) []byte {
	t.Helper()
	p := make([]byte, n)
	v.access(t, lv, off, p, false)
	return p
}

// HashLV returns the SHA-256 of volume lv's first size bytes (hex), read 4 MiB at a time.
func (v *VG) HashLV(t testing.TB, lv string, size int64) string {
	t.Helper()
	h := sha256.New()
	const step = 4 << 20
	pieces := v.pieces(t, lv)
	buf := make([]byte, step)
	for off := int64(0); off < size; off += step {
		b := buf[:min(step, size-off)]
		accessPieces(t, pieces, off, b, false)
		_, _ = h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}
