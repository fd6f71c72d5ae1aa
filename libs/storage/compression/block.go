package compression

import (
	"bytes"
	"sync"
)

// minMember is the smallest piece Compress compresses on its own: below it the members'
// headers and lost matches cost more than the parallelism saves.
const minMember = 2 << 20

// Compress compresses data held in memory, using up to threads cores: gzip splits it into
// pieces compressed concurrently and concatenated as members, which every gzip reader
// (RFC 1952; Python's gzip module, hence barman, included) decodes as one stream. Other kinds
// use their stream encoder with threads (zstd's encoder splits blocks itself: several zstd
// frames would not do, barman's zstandard reader stops after the first).
func Compress(k Kind, data []byte, threads int) ([]byte, error) {
	n := min(max(1, threads), max(1, len(data)/minMember))
	if n == 1 || k != Gzip {
		return compressOne(k, data, threads)
	}
	size := (len(data) + n - 1) / n
	parts := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		lo, hi := i*size, min(len(data), (i+1)*size)
		wg.Go(func() { parts[i], errs[i] = compressOne(k, data[lo:hi], 1) })
	}
	wg.Wait()
	total := 0
	for i, p := range parts {
		if errs[i] != nil {
			return nil, errs[i]
		}
		total += len(p)
	}
	out := make([]byte, 0, total)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

func compressOne(k Kind, data []byte, threads int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(data)/4 + 1024)
	w, err := Writer(k, &buf, threads)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
