package compression

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// pythonCodecs is how barman-cloud (Python) writes and reads each kind: python-snappy's
// stream_compress (what --snappy uses), lz4.frame, lzma (xz), bz2, gzip, zstandard.
//
// Debian 12's python3-snappy 0.5.3 crashes computing CRC-32C on Python 3.11
// ("PY_SSIZE_T_CLEAN macro must be defined"), so barman-cloud's --snappy fails on a stock
// Debian 12; the script swaps in crcmod's CRC-32C (same values), leaving the stream format
// python-snappy writes untouched.
const pythonCodecs = `
import sys, io, gzip, bz2, lzma
try:
    import snappy.snappy, crcmod.predefined
    snappy.snappy._crc32c = crcmod.predefined.mkCrcFun('crc-32c')
except ImportError:
    pass
mode, kind, src, dst = sys.argv[1:5]
data = open(src, 'rb').read()
def comp(d):
    if kind == 'snappy':
        import snappy; out = io.BytesIO(); snappy.stream_compress(io.BytesIO(d), out); return out.getvalue()
    if kind == 'lz4':
        import lz4.frame; return lz4.frame.compress(d)
    if kind == 'xz': return lzma.compress(d)
    if kind == 'bzip2': return bz2.compress(d)
    if kind == 'gzip': return gzip.compress(d)
    if kind == 'zstd':
        import zstandard; return zstandard.ZstdCompressor().compress(d)
def decomp(d):
    if kind == 'snappy':
        import snappy; out = io.BytesIO(); snappy.stream_decompress(io.BytesIO(d), out); return out.getvalue()
    if kind == 'lz4':
        import lz4.frame; return lz4.frame.decompress(d)
    if kind == 'xz': return lzma.decompress(d)
    if kind == 'bzip2': return bz2.decompress(d)
    if kind == 'gzip': return gzip.decompress(d)
    if kind == 'zstd':
        import zstandard; return zstandard.ZstdDecompressor().decompressobj().decompress(d)
open(dst, 'wb').write(comp(data) if mode == 'c' else decomp(data))
`

// python finds the system Python with barman's optional codecs (Debian: python3-snappy,
// python3-lz4, python3-zstandard, python3-crcmod).
func python(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import snappy, lz4.frame, zstandard, crcmod").Run() == nil {
			return path
		}
	}
	testenv.SkipOrFail(t, "no python3 with snappy, lz4 and zstandard (apt-get install python3-snappy python3-lz4 python3-zstandard python3-crcmod)")
	return ""
}

// TestBarmanFormats: what Python's codecs (barman-cloud's) write, we read; what we write,
// they read — for every kind, on a 4 MiB WAL-like file (many blocks of every format).
func TestBarmanFormats(t *testing.T) {
	py := python(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "codec.py")
	if err := os.WriteFile(script, []byte(pythonCodecs), 0o600); err != nil {
		t.Fatal(err)
	}
	data := sample(4<<20 + 123)
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, data, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		if out, err := exec.Command(py, append([]string{script}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("python %v: %v\n%s", args, err, out)
		}
	}
	for _, k := range Kinds() {
		if k == None {
			continue
		}
		t.Run(string(k), func(t *testing.T) {
			theirs := filepath.Join(dir, string(k)+".theirs")
			run("c", string(k), plain, theirs)
			f, err := os.Open(theirs)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, err := Reader(k, f, 2)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("reading Python's %s: %d bytes, %v", k, len(got), err)
			}
			if !k.Writable() {
				return
			}
			ours := filepath.Join(dir, string(k)+".ours")
			buf, err := Compress(k, data, 3) // several members or frames for gzip and zstd
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(ours, buf, 0o600); err != nil {
				t.Fatal(err)
			}
			back := filepath.Join(dir, string(k)+".back")
			run("d", string(k), ours, back)
			if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("Python reading our %s: %d bytes, %v", k, len(got), err)
			}
		})
	}
}
