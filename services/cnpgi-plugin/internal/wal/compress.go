package wal

import (
	"fmt"
	"io"

	"github.com/plinth-dev/plinth/libs/storage/compression"
)

// Compression is how a WAL file is stored; the object key's extension says which, as in
// barman-cloud (".gz", ".bz2", ".zst", ".snappy", ".lz4", ".xz", none).
type Compression = compression.Kind

// compressionOfSuffix recognises what follows the WAL name in an object key. ok is false for
// suffixes that are not a compression we read.
func compressionOfSuffix(suffix string) (Compression, bool) { return compression.OfSuffix(suffix) }

// stripCompression removes a compression extension we read from an object's base name.
func stripCompression(name string) string { return compression.TrimExt(name) }

// writableCompression validates a configured compression.
func writableCompression(s string) (Compression, error) {
	c, err := compression.ParseWritable(s)
	if err != nil {
		return "", fmt.Errorf("compression %w", err)
	}
	return c, nil
}

// compressor wraps w; Close flushes the compressed stream (not w). One zstd thread: WAL files
// are small and many are archived in parallel.
func compressor(c Compression, w io.Writer) (io.WriteCloser, error) {
	return compression.Writer(c, w, 1)
}

// decompressor reads c from r. Reading to EOF verifies gzip's and zstd's checksums.
func decompressor(c Compression, r io.Reader) (io.ReadCloser, error) {
	return compression.Reader(c, r, 1)
}
