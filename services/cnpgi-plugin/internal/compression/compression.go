// Package compression is how WAL files and backup archives are compressed in the object store:
// barman-cloud's algorithms and object-key suffixes, written with gzip level 1 (any gzip reader,
// barman's included, reads it) or fast zstd, and read also as bzip2 (barman's --bzip2).
package compression

import (
	"compress/bzip2"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Kind is a compression algorithm; its Ext is the object-key suffix barman-cloud uses.
type Kind string

// The kinds written (None, Gzip, Zstd) and read (also Bzip2).
const (
	None  Kind = "none"
	Gzip  Kind = "gzip"
	Zstd  Kind = "zstd"
	Bzip2 Kind = "bzip2"
)

// all lists every readable kind with its suffix, in a fixed order.
var all = []struct {
	kind Kind
	ext  string
}{{None, ""}, {Gzip, ".gz"}, {Zstd, ".zst"}, {Bzip2, ".bz2"}}

// Ext is the object-key suffix: "", ".gz", ".zst" or ".bz2".
func (k Kind) Ext() string {
	for _, c := range all {
		if c.kind == k {
			return c.ext
		}
	}
	return ""
}

// OfSuffix recognises a suffix (".gz", ...) of a kind we read; "" is None.
func OfSuffix(suffix string) (Kind, bool) {
	for _, c := range all {
		if c.ext == suffix {
			return c.kind, true
		}
	}
	return "", false
}

// TrimExt removes the suffix of a kind we read from name.
func TrimExt(name string) string {
	for _, c := range all {
		if c.ext != "" && strings.HasSuffix(name, c.ext) {
			return strings.TrimSuffix(name, c.ext)
		}
	}
	return name
}

// ParseWritable validates a configured kind: "" means gzip (barman's and CloudNativePG's
// default); case does not matter; bzip2 is read-only.
func ParseWritable(s string) (Kind, error) {
	switch k := Kind(strings.ToLower(s)); k {
	case "":
		return Gzip, nil
	case None, Gzip, Zstd:
		return k, nil
	}
	return "", fmt.Errorf("%q is not one of gzip, zstd, none", s)
}

// Writer compresses into w; Close flushes the compressed stream, not w. zstdThreads bounds
// zstd's encoder goroutines (1 for many small WAL files, more for one large backup stream).
func Writer(k Kind, w io.Writer, zstdThreads int) (io.WriteCloser, error) {
	switch k {
	case None:
		return nopWriteCloser{w}, nil
	case Gzip:
		// Level 1: WAL and PGDATA pages compress well at any level; higher levels cost several
		// times the CPU for a few percent of size and would bound archiving speed.
		return gzip.NewWriterLevel(w, gzip.BestSpeed)
	case Zstd:
		return zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(max(1, zstdThreads)))
	}
	return nil, fmt.Errorf("cannot write %s", k)
}

// Reader decompresses r; reading to EOF verifies gzip's and zstd's checksums.
func Reader(k Kind, r io.Reader, zstdThreads int) (io.ReadCloser, error) {
	switch k {
	case None:
		return io.NopCloser(r), nil
	case Gzip:
		return gzip.NewReader(r)
	case Zstd:
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(max(1, zstdThreads)))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	case Bzip2:
		return io.NopCloser(bzip2.NewReader(r)), nil
	}
	return nil, fmt.Errorf("cannot read %s", k)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
