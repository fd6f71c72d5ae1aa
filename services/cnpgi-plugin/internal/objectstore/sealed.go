package objectstore

import (
	"bufio"
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// The sealed stream format (version 1), written after compression:
//
//	header: magic "PLNTHENC" (8) | version (1) | key id (8) | nonce prefix (8, random per object)
//	chunks: AES-256-GCM(plaintext of SealChunkSize bytes, the last one shorter or equal) + tag (16)
//
// The nonce of chunk i is the nonce prefix followed by i as a big-endian uint32, so chunks
// cannot be reordered; the additional data is the whole header followed by 1 for the last
// chunk and 0 otherwise, so a stream cut at a chunk boundary, a swapped header or a swapped
// key id fails authentication. Empty input is one empty final chunk.
const (
	// SealChunkSize is the plaintext size of every chunk but the last.
	SealChunkSize = 64 << 10
	sealMagic     = "PLNTHENC"
	sealVersion   = 1
	sealHeaderLen = len(sealMagic) + 1 + keyIDLen + 8
	sealTagLen    = 16
)

// ErrDecrypt: an encrypted object could not be decrypted: wrong or missing key, or the
// object was truncated, reordered or tampered with.
var ErrDecrypt = errors.New("cannot decrypt object")

// sealWriter encrypts what is written to it; Close writes the final chunk (not closing w).
type sealWriter struct {
	w      io.Writer
	aead   cipher.AEAD
	header []byte
	buf    []byte // plaintext not yet sealed, at most SealChunkSize
	out    []byte
	n      uint64
	closed bool
}

func newSealWriter(w io.Writer, k *EncryptionKey) (*sealWriter, error) {
	h := make([]byte, sealHeaderLen)
	copy(h, sealMagic)
	h[len(sealMagic)] = sealVersion
	copy(h[len(sealMagic)+1:], k.id[:])
	if _, err := rand.Read(h[len(sealMagic)+1+keyIDLen:]); err != nil {
		return nil, fmt.Errorf("encryption nonce: %w", err)
	}
	if _, err := w.Write(h); err != nil {
		return nil, err
	}
	return &sealWriter{w: w, aead: k.aead, header: h, buf: make([]byte, 0, SealChunkSize)}, nil
}

func (s *sealWriter) Write(p []byte) (int, error) {
	if s.closed {
		return 0, errors.New("write to a closed encryption stream")
	}
	written := 0
	for len(p) > 0 {
		// A full buffer is sealed only once more data arrives: until then it may be the last.
		if len(s.buf) == SealChunkSize {
			if err := s.seal(false); err != nil {
				return written, err
			}
		}
		n := copy(s.buf[len(s.buf):SealChunkSize], p)
		s.buf = s.buf[:len(s.buf)+n]
		p, written = p[n:], written+n
	}
	return written, nil
}

// Close seals the last chunk.
func (s *sealWriter) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.seal(true)
}

func (s *sealWriter) seal(final bool) error {
	if s.n > math.MaxUint32 {
		return errors.New("encrypted object too large (over 2^32 chunks)")
	}
	s.out = s.aead.Seal(s.out[:0], chunkNonce(s.header, s.n), s.buf, chunkAD(s.header, final))
	s.n++
	s.buf = s.buf[:0]
	_, err := s.w.Write(s.out)
	return err
}

func chunkNonce(header []byte, i uint64) []byte {
	nonce := make([]byte, 12)
	copy(nonce, header[sealHeaderLen-8:])
	binary.BigEndian.PutUint32(nonce[8:], uint32(i))
	return nonce
}

func chunkAD(header []byte, final bool) []byte {
	ad := append(make([]byte, 0, len(header)+1), header...)
	if final {
		return append(ad, 1)
	}
	return append(ad, 0)
}

// isSealed reports whether b starts with the sealed stream's magic.
func isSealed(b []byte) bool { return bytes.HasPrefix(b, []byte(sealMagic)) }

// sealReader decrypts a sealed stream; errors wrap ErrDecrypt and say which object of which
// store failed, never the key.
type sealReader struct {
	r      *bufio.Reader
	aead   cipher.AEAD
	header []byte
	chunk  []byte
	plain  []byte
	n      uint64
	done   bool
	what   string // "object KEY in store NAME" for errors
}

func (s *sealReader) fail(format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrDecrypt, s.what, fmt.Sprintf(format, args...))
}

func (s *sealReader) Read(p []byte) (int, error) {
	for len(s.plain) == 0 {
		if s.done {
			return 0, io.EOF
		}
		if err := s.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, s.plain)
	s.plain = s.plain[n:]
	return n, nil
}

// next reads and opens one chunk. A chunk is the last when the stream ends right after it.
func (s *sealReader) next() error {
	n, err := io.ReadFull(s.r, s.chunk[:cap(s.chunk)])
	switch {
	case errors.Is(err, io.EOF):
		return s.fail("the object is truncated (no final chunk)")
	case errors.Is(err, io.ErrUnexpectedEOF):
		s.done = true
	case err != nil:
		return err
	default:
		if _, perr := s.r.Peek(1); errors.Is(perr, io.EOF) {
			s.done = true
		} else if perr != nil {
			return perr
		}
	}
	if n < sealTagLen {
		return s.fail("the object is truncated (short chunk %d)", s.n)
	}
	if s.n > math.MaxUint32 {
		return s.fail("too many chunks")
	}
	plain, oerr := s.aead.Open(s.chunk[:0], chunkNonce(s.header, s.n), s.chunk[:n], chunkAD(s.header, s.done))
	if oerr != nil {
		return s.fail("chunk %d fails authentication: the object was truncated or modified", s.n)
	}
	s.plain = plain
	s.n++
	return nil
}
