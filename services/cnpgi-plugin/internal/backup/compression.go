package backup

import (
	"fmt"
	"io"
	"runtime"

	"github.com/plinth-dev/plinth/libs/storage/compression"
)

// Compression is how a backup's tar archives are stored; the key's suffix says which, as in
// barman-cloud (.tar.gz, .tar.bz2, .tar.zst, .tar).
type Compression = compression.Kind

// ParseCompression validates a compression a backup may be written with ("" is gzip,
// barman-cloud-backup's -z and what CloudNativePG configures by default).
func ParseCompression(s string) (Compression, error) { return compression.ParseWritable(s) }

// compressor wraps w; Close flushes the compressed stream, not w. Unlike WAL segments,
// backups are large single streams, so zstd may use several cores.
func compressor(c Compression, w io.Writer) (io.WriteCloser, error) {
	wc, err := compression.Writer(c, w, min(4, runtime.GOMAXPROCS(0)))
	if err != nil {
		return nil, fmt.Errorf("archives: %w", err)
	}
	return wc, nil
}

// decompressor reads c from r; reading to the end verifies gzip's and zstd's checksums.
func decompressor(c Compression, r io.Reader) (io.ReadCloser, error) {
	return compression.Reader(c, r, runtime.GOMAXPROCS(0))
}

// counter counts the bytes written through it.
type counter struct{ n int64 }

func (c *counter) Write(b []byte) (int, error) { c.n += int64(len(b)); return len(b), nil }
