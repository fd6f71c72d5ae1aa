package compression

import (
	"bytes"
	"io"
	"testing"
)

func TestRoundTripEveryWritableKind(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef WAL page "), 4096)
	for _, k := range []Kind{None, Gzip, Zstd} {
		var buf bytes.Buffer
		w, err := Writer(k, &buf, 2)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := Reader(k, &buf, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: round trip differs (err %v)", k, err)
		}
	}
	if _, err := Writer(Bzip2, io.Discard, 1); err == nil {
		t.Fatal("bzip2 is read-only")
	}
}

func TestNamesAndSuffixes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Kind
		ok   bool
	}{{"", Gzip, true}, {"ZSTD", Zstd, true}, {"none", None, true}, {"bzip2", "", false}, {"lz4", "", false}} {
		got, err := ParseWritable(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseWritable(%q) = %q, %v", c.in, got, err)
		}
	}
	for _, k := range []Kind{None, Gzip, Zstd, Bzip2} {
		if got, ok := OfSuffix(k.Ext()); !ok || got != k {
			t.Errorf("OfSuffix(%q) = %q %v", k.Ext(), got, ok)
		}
	}
	if _, ok := OfSuffix(".snappy"); ok {
		t.Error(".snappy recognised")
	}
	if got := TrimExt("000000010000000000000001.gz"); got != "000000010000000000000001" {
		t.Errorf("TrimExt: %q", got)
	}
}
