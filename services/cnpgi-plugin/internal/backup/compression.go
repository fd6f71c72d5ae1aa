package backup

import (
	"compress/bzip2"
	"fmt"
	"io"
	"runtime"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Compression is how a backup's tar archives are stored; the key's suffix says which, as in
// barman-cloud (.tar.gz, .tar.bz2, .tar.zst, .tar).
type Compression string

// The compressions written (none, gzip, zstd) and read (also bzip2, barman's --bzip2).
const (
	CompressionNone  Compression = "none"
	CompressionGzip  Compression = "gzip"
	CompressionZstd  Compression = "zstd"
	CompressionBzip2 Compression = "bzip2"
)

// Ext is the suffix after ".tar".
func (c Compression) Ext() string {
	return map[Compression]string{CompressionGzip: ".gz", CompressionZstd: ".zst", CompressionBzip2: ".bz2"}[c]
}

// ParseCompression validates a compression a backup may be written with ("" is gzip,
// barman-cloud-backup's -z and what CloudNativePG configures by default).
func ParseCompression(s string) (Compression, error) {
	switch c := Compression(s); c {
	case "":
		return CompressionGzip, nil
	case CompressionNone, CompressionGzip, CompressionZstd:
		return c, nil
	}
	return "", fmt.Errorf("%q is not one of gzip, zstd, none", s)
}

// compressor wraps w; Close flushes the compressed stream, not w. Unlike WAL segments,
// backups are large single streams, so zstd may use several cores.
func compressor(c Compression, w io.Writer) (io.WriteCloser, error) {
	switch c {
	case CompressionNone:
		return nopWriteCloser{w}, nil
	case CompressionGzip:
		// Level 1: PGDATA is mostly pages that compress well at any level; higher levels cost
		// several times the CPU and would bound the backup's speed. Any gzip reader reads it.
		return gzip.NewWriterLevel(w, gzip.BestSpeed)
	case CompressionZstd:
		return zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(min(4, runtime.GOMAXPROCS(0))))
	}
	return nil, fmt.Errorf("cannot write %s archives", c)
}

// decompressor reads c from r; reading to the end verifies gzip's and zstd's checksums.
func decompressor(c Compression, r io.Reader) (io.ReadCloser, error) {
	switch c {
	case CompressionNone:
		return io.NopCloser(r), nil
	case CompressionGzip:
		return gzip.NewReader(r)
	case CompressionZstd:
		d, err := zstd.NewReader(r)
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	case CompressionBzip2:
		return io.NopCloser(bzip2.NewReader(r)), nil
	}
	return nil, fmt.Errorf("cannot read %s archives", c)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// counter counts the bytes written through it.
type counter struct{ n int64 }

func (c *counter) Write(b []byte) (int, error) { c.n += int64(len(b)); return len(b), nil }
