package wal

import (
	"compress/bzip2"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Compression is how a WAL file is stored; the object key's extension says which, as in
// barman-cloud (".gz", ".bz2", ".zst", none).
type Compression string

// The compressions the plugin reads; it writes none, gzip and zstd.
const (
	CompressionNone  Compression = "none"
	CompressionGzip  Compression = "gzip"
	CompressionZstd  Compression = "zstd"
	CompressionBzip2 Compression = "bzip2" // read only: archives written by barman with --bzip2
)

var extensions = map[Compression]string{CompressionNone: "", CompressionGzip: ".gz", CompressionZstd: ".zst", CompressionBzip2: ".bz2"}

// Ext is the object key suffix.
func (c Compression) Ext() string { return extensions[c] }

// compressionOfSuffix recognises what follows the WAL name in an object key. ok is false for
// suffixes that are not a compression we read (barman's .snappy, .lz4, .xz, or junk).
func compressionOfSuffix(suffix string) (Compression, bool) {
	for c, ext := range extensions {
		if suffix == ext {
			return c, true
		}
	}
	return "", false
}

// stripCompression removes a compression extension we read from an object's base name.
func stripCompression(name string) string {
	for _, ext := range extensions {
		if ext != "" && strings.HasSuffix(name, ext) {
			return strings.TrimSuffix(name, ext)
		}
	}
	return name
}

// writableCompression validates a configured compression.
func writableCompression(s string) (Compression, error) {
	switch c := Compression(strings.ToLower(s)); c {
	case CompressionNone, CompressionGzip, CompressionZstd:
		return c, nil
	case "":
		return CompressionGzip, nil
	}
	return "", fmt.Errorf("compression %q is not one of gzip, zstd, none", s)
}

// compressor wraps w; Close flushes the compressed stream (not w).
func compressor(c Compression, w io.Writer) (io.WriteCloser, error) {
	switch c {
	case CompressionNone:
		return nopWriteCloser{w}, nil
	case CompressionGzip:
		// Level 1: WAL is large and hot; barman's default (9) costs several times the CPU
		// for a few percent of size. Any gzip reader (barman's included) reads it.
		return gzip.NewWriterLevel(w, gzip.BestSpeed)
	case CompressionZstd:
		return zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	}
	return nil, fmt.Errorf("cannot write %s", c)
}

// decompressor reads c from r. Reading to EOF verifies gzip's and zstd's checksums.
func decompressor(c Compression, r io.Reader) (io.ReadCloser, error) {
	switch c {
	case CompressionNone:
		return io.NopCloser(r), nil
	case CompressionGzip:
		return gzip.NewReader(r)
	case CompressionZstd:
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	case CompressionBzip2:
		return io.NopCloser(bzip2.NewReader(r)), nil
	}
	return nil, fmt.Errorf("cannot read %s", c)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
