package compression

import (
	"bytes"
	"crypto/rand"
	"io"
	"strings"
	"testing"
)

// sample is WAL-like: pages of text and zeros with some random bytes.
func sample(n int) []byte {
	b := bytes.Repeat([]byte("0123456789abcdef WAL page \x00\x00\x00\x00"), n/30+1)[:n]
	_, _ = rand.Read(b[n/3 : n/3+n/10])
	return b
}

func TestRoundTripEveryWritableKind(t *testing.T) {
	for _, size := range []int{0, 1, 65536, 1<<20 + 7} {
		data := sample(size)
		for _, k := range Kinds() {
			if !k.Writable() {
				if _, err := Writer(k, io.Discard, 1); err == nil {
					t.Fatalf("%s is read-only but Writer accepted it", k)
				}
				continue
			}
			for _, threads := range []int{1, 4} {
				var buf bytes.Buffer
				w, err := Writer(k, &buf, threads)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.Write(data); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				r, err := Reader(k, &buf, threads)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(r)
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("%s, %d bytes, %d threads: round trip differs (err %v)", k, size, threads, err)
				}
			}
		}
	}
}

// TestCorruptionIsDetected: a flipped byte in the middle of any compressed stream is an
// error, never silently different bytes.
func TestCorruptionIsDetected(t *testing.T) {
	data := sample(300000)
	for _, k := range Kinds() {
		if !k.Writable() || k == None {
			continue
		}
		var buf bytes.Buffer
		w, _ := Writer(k, &buf, 1)
		_, _ = w.Write(data)
		_ = w.Close()
		b := buf.Bytes()
		b[len(b)/2] ^= 0x55
		r, err := Reader(k, bytes.NewReader(b), 1)
		if err == nil {
			var got []byte
			got, err = io.ReadAll(r)
			if err == nil && !bytes.Equal(got, data) {
				t.Errorf("%s: corruption gave other bytes without an error", k)
			}
		}
		if err == nil {
			t.Errorf("%s: corruption not detected", k)
		}
	}
}

func TestNamesAndSuffixes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Kind
		ok   bool
	}{{"", Gzip, true}, {"ZSTD", Zstd, true}, {"none", None, true}, {"snappy", Snappy, true}, {"lz4", LZ4, true},
		{"bzip2", "", false}, {"xz", "", false}, {"lzo", "", false}, {strings.Repeat("x", 1000), "", false}} {
		got, err := ParseWritable(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseWritable(%.20q) = %q, %v", c.in, got, err)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("ParseWritable: the error repeats the input (%d bytes)", len(err.Error()))
		}
	}
	want := map[Kind]string{None: "", Gzip: ".gz", Zstd: ".zst", Bzip2: ".bz2", Snappy: ".snappy", LZ4: ".lz4", XZ: ".xz"}
	for k, ext := range want {
		if k.Ext() != ext {
			t.Errorf("%s.Ext() = %q, want %q (barman-cloud's suffix)", k, k.Ext(), ext)
		}
		if got, ok := OfSuffix(ext); !ok || got != k {
			t.Errorf("OfSuffix(%q) = %q %v", ext, got, ok)
		}
	}
	if _, ok := OfSuffix(".lzo"); ok {
		t.Error(".lzo recognised")
	}
	if got := TrimExt("000000010000000000000001.snappy"); got != "000000010000000000000001" {
		t.Errorf("TrimExt: %q", got)
	}
}

// TestCompressInParallel: what Compress writes in pieces reads back as one stream with the
// package's readers, for every writable kind and size around the piece size.
func TestCompressInParallel(t *testing.T) {
	for _, size := range []int{0, 1, minMember - 1, minMember, 2*minMember + 3, 16 << 20} {
		data := sample(size)
		for _, k := range Kinds() {
			if !k.Writable() {
				continue
			}
			out, err := Compress(k, data, 4)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Reader(k, bytes.NewReader(out), 1)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s, %d bytes: %d back, %v", k, size, len(got), err)
			}
		}
	}
}
