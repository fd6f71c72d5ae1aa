// Package compression is how objects are compressed in a store, in barman-cloud's formats
// and object-key suffixes: gzip (level 1, which any gzip reader, barman's included, reads),
// zstd, snappy (the framing format python-snappy's stream_compress writes, which is what
// barman-cloud's --snappy produces), lz4 (the LZ4 frame format of python-lz4's lz4.frame)
// and xz (the .xz container of Python's lzma) are written and read; bzip2 is read only.
package compression

import (
	"compress/bzip2"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/ulikunitz/xz"
)

// Kind is a compression algorithm; its Ext is the object-key suffix barman-cloud uses.
type Kind string

// The kinds read; Writable says which are also written.
const (
	None   Kind = "none"
	Gzip   Kind = "gzip"
	Zstd   Kind = "zstd"
	Bzip2  Kind = "bzip2"
	Snappy Kind = "snappy"
	LZ4    Kind = "lz4"
	XZ     Kind = "xz"
)

// all lists every readable kind with its suffix (barman-cloud's ALLOWED_COMPRESSIONS) and
// whether it is written, in a fixed order.
var all = []struct {
	kind     Kind
	ext      string
	writable bool
}{
	{None, "", true}, {Gzip, ".gz", true}, {Zstd, ".zst", true}, {Bzip2, ".bz2", false},
	{Snappy, ".snappy", true}, {LZ4, ".lz4", true}, {XZ, ".xz", false},
}

// Kinds lists every readable kind.
func Kinds() []Kind {
	out := make([]Kind, len(all))
	for i, c := range all {
		out[i] = c.kind
	}
	return out
}

// Ext is the object-key suffix: "", ".gz", ".zst", ".bz2", ".snappy", ".lz4" or ".xz".
func (k Kind) Ext() string {
	for _, c := range all {
		if c.kind == k {
			return c.ext
		}
	}
	return ""
}

// Writable reports whether k is written (bzip2 and xz are read only: their Go encoders are
// too slow for WAL archiving).
func (k Kind) Writable() bool {
	for _, c := range all {
		if c.kind == k {
			return c.writable
		}
	}
	return false
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

// Parse validates a kind name (case does not matter).
func Parse(s string) (Kind, error) {
	k := Kind(strings.ToLower(s))
	for _, c := range all {
		if c.kind == k {
			return k, nil
		}
	}
	return "", fmt.Errorf("%.32q is not one of %s", s, names(false))
}

// ParseWritable validates a configured kind: "" means gzip (barman's and CloudNativePG's
// default); case does not matter.
func ParseWritable(s string) (Kind, error) {
	if s == "" {
		return Gzip, nil
	}
	k, err := Parse(s)
	if err != nil || !k.Writable() {
		return "", fmt.Errorf("%.32q is not one of %s", s, names(true))
	}
	return k, nil
}

func names(writable bool) string {
	var out []string
	for _, c := range all {
		if !writable || c.writable {
			out = append(out, string(c.kind))
		}
	}
	return strings.Join(out, ", ")
}

// Writer compresses into w; Close flushes the compressed stream, not w. threads bounds the
// encoder's goroutines where it has several (zstd, snappy): 1 for many small files, more
// for one large stream.
func Writer(k Kind, w io.Writer, threads int) (io.WriteCloser, error) {
	threads = max(1, threads)
	switch k {
	case None:
		return nopWriteCloser{w}, nil
	case Gzip:
		// Level 1: WAL and PGDATA pages compress well at any level; higher levels cost several
		// times the CPU for a few percent of size and would bound archiving speed.
		return gzip.NewWriterLevel(w, gzip.BestSpeed)
	case Zstd:
		return zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(threads))
	case Snappy:
		// Snappy-compatible framing (stream identifier, CRC-32C per chunk, 64 KiB blocks), so
		// python-snappy's stream_decompress reads it.
		return s2.NewWriter(w, s2.WriterSnappyCompat(), s2.WriterConcurrency(threads)), nil
	case LZ4:
		lw := lz4.NewWriter(w)
		if err := lw.Apply(lz4.ConcurrencyOption(threads), lz4.ChecksumOption(true)); err != nil {
			return nil, err
		}
		return lw, nil
	}
	return nil, fmt.Errorf("cannot write %s", k)
}

// Reader decompresses r; reading to EOF verifies the format's checksums (gzip, zstd,
// snappy, lz4 and xz carry them).
func Reader(k Kind, r io.Reader, threads int) (io.ReadCloser, error) {
	threads = max(1, threads)
	switch k {
	case None:
		return io.NopCloser(r), nil
	case Gzip:
		return gzip.NewReader(r)
	case Zstd:
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(threads))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	case Bzip2:
		return io.NopCloser(bzip2.NewReader(r)), nil
	case Snappy:
		// S2's reader decodes snappy framed streams; it refuses anything else.
		return io.NopCloser(s2.NewReader(r, s2.ReaderMaxBlockSize(64<<10))), nil
	case LZ4:
		lr := lz4.NewReader(r)
		if err := lr.Apply(lz4.ConcurrencyOption(threads)); err != nil {
			return nil, err
		}
		return io.NopCloser(lr), nil
	case XZ:
		xr, err := xz.NewReader(r)
		if err != nil {
			return nil, err
		}
		return io.NopCloser(xr), nil
	}
	return nil, fmt.Errorf("cannot read %s", k)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
