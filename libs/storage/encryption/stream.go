package encryption

import (
	"bufio"
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// The stream format (version 1):
//
//	header: magic "PLNTHENC" (8) | version (1) | key id (8) | nonce prefix (8, random per stream)
//	chunks: AES-256-GCM(plaintext of ChunkSize bytes, the last one shorter or equal) + tag (16)
//
// The nonce of chunk i is the nonce prefix followed by i as a big-endian uint32, so chunks
// cannot be reordered; the additional data is the whole header followed by 1 for the last
// chunk and 0 otherwise, so a stream cut at a chunk boundary, a swapped header or a swapped
// key id fails authentication. Empty input is one empty final chunk.
const (
	// ChunkSize is the plaintext size of every chunk but the last.
	ChunkSize = 64 << 10
	// HeaderSize is the length of the header.
	HeaderSize = len(magic) + 1 + keyIDLen + 8
	// TagSize is the authentication tag after each chunk.
	TagSize = 16
	magic   = "PLNTHENC"
	version = 1
)

// ErrDecrypt: a stream could not be decrypted: wrong or missing key, or the stream was
// truncated, reordered or tampered with.
var ErrDecrypt = errors.New("cannot decrypt")

// KeyError: the stream was encrypted with a key the reader does not hold. It wraps
// ErrDecrypt.
type KeyError struct {
	// KeyID is the fingerprint in the stream's header.
	KeyID string
	// Have are the fingerprints of the reader's keys (none: the reader has no key).
	Have []string
}

func (e *KeyError) Error() string {
	if len(e.Have) == 0 {
		return fmt.Sprintf("encrypted with key %s, but no encryption key configured", e.KeyID)
	}
	return fmt.Sprintf("encrypted with key %s, but the configured keys are %s: configure the key it was written with",
		e.KeyID, strings.Join(e.Have, ", "))
}

// Unwrap makes errors.Is(err, ErrDecrypt) hold.
func (e *KeyError) Unwrap() error { return ErrDecrypt }

// Header is what a stream's first bytes say.
type Header struct {
	// Encrypted is false for a stream that does not start with the format's magic.
	Encrypted bool
	// KeyID is the fingerprint of the key that wrote an encrypted stream.
	KeyID string
}

// NewWriter returns a writer that encrypts into w with k; Close writes the final chunk but
// does not close w. Encrypt after compressing: ciphertext does not compress.
func NewWriter(w io.Writer, k *Key) (io.WriteCloser, error) {
	h := make([]byte, HeaderSize)
	copy(h, magic)
	h[len(magic)] = version
	copy(h[len(magic)+1:], k.id[:])
	if _, err := rand.Read(h[len(magic)+1+keyIDLen:]); err != nil {
		return nil, fmt.Errorf("encryption nonce: %w", err)
	}
	if _, err := w.Write(h); err != nil {
		return nil, err
	}
	return &writer{w: w, aead: k.aead, header: h, buf: make([]byte, 0, ChunkSize)}, nil
}

// NewReader returns the plaintext of r. A stream in this format is decrypted with the key
// among keys whose fingerprint its header names (*KeyError when none does); any other stream
// passes through unchanged, so data written before encryption was turned on stays
// readable — callers that require encryption check the returned Header. Errors wrap
// ErrDecrypt; reading to EOF authenticates every chunk.
func NewReader(r io.Reader, keys ...*Key) (io.Reader, Header, error) {
	br := bufio.NewReaderSize(r, ChunkSize+TagSize)
	head, err := br.Peek(HeaderSize)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, Header{}, err
	}
	if !bytes.HasPrefix(head, []byte(magic)) {
		return br, Header{}, nil
	}
	if len(head) < HeaderSize {
		return nil, Header{}, fmt.Errorf("%w: truncated (incomplete header)", ErrDecrypt)
	}
	if v := head[len(magic)]; v != version {
		return nil, Header{}, fmt.Errorf("%w: unknown encryption format version %d (newer software wrote it)", ErrDecrypt, v)
	}
	id := hex.EncodeToString(head[len(magic)+1 : len(magic)+1+keyIDLen])
	hdr := Header{Encrypted: true, KeyID: id}
	var key *Key
	have := make([]string, 0, len(keys))
	for _, k := range keys {
		if k == nil {
			continue
		}
		have = append(have, k.ID())
		if k.ID() == id {
			key = k
		}
	}
	if key == nil {
		return nil, hdr, &KeyError{KeyID: id, Have: have}
	}
	header := append([]byte(nil), head...)
	if _, err := br.Discard(HeaderSize); err != nil {
		return nil, hdr, err
	}
	return &reader{r: br, aead: key.aead, header: header, chunk: make([]byte, 0, ChunkSize+TagSize)}, hdr, nil
}

// IsEncrypted reports whether b (a stream's first bytes) starts with the format's magic.
func IsEncrypted(b []byte) bool { return bytes.HasPrefix(b, []byte(magic)) }

// ReadHeader says what a stream's first HeaderSize bytes declare, without a key: whether it
// is encrypted and with which key. A copy between stores uses it to pass through objects
// already under the destination's key and re-encrypt the others.
func ReadHeader(b []byte) Header {
	if len(b) < HeaderSize || !IsEncrypted(b) || b[len(magic)] != version {
		return Header{Encrypted: IsEncrypted(b)}
	}
	return Header{Encrypted: true, KeyID: hex.EncodeToString(b[len(magic)+1 : len(magic)+1+keyIDLen])}
}

// EncryptedSize is the stream size of n bytes of plaintext.
func EncryptedSize(n int64) int64 {
	chunks := max(1, (n+ChunkSize-1)/ChunkSize)
	return int64(HeaderSize) + n + chunks*TagSize
}

// writer encrypts what is written to it; Close writes the final chunk (not closing w).
type writer struct {
	w      io.Writer
	aead   cipher.AEAD
	header []byte
	buf    []byte // plaintext not yet sealed, at most ChunkSize
	out    []byte
	n      uint64
	closed bool
}

func (s *writer) Write(p []byte) (int, error) {
	if s.closed {
		return 0, errors.New("write to a closed encryption stream")
	}
	written := 0
	for len(p) > 0 {
		// A full buffer is sealed only once more data arrives: until then it may be the last.
		if len(s.buf) == ChunkSize {
			if err := s.seal(false); err != nil {
				return written, err
			}
		}
		n := copy(s.buf[len(s.buf):ChunkSize], p)
		s.buf = s.buf[:len(s.buf)+n]
		p, written = p[n:], written+n
	}
	return written, nil
}

// Close seals the last chunk.
func (s *writer) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.seal(true)
}

func (s *writer) seal(final bool) error {
	if s.n > math.MaxUint32 {
		return errors.New("encrypted stream too large (over 2^32 chunks)")
	}
	s.out = s.aead.Seal(s.out[:0], chunkNonce(s.header, s.n), s.buf, chunkAD(s.header, final))
	s.n++
	s.buf = s.buf[:0]
	_, err := s.w.Write(s.out)
	return err
}

func chunkNonce(header []byte, i uint64) []byte {
	nonce := make([]byte, 12)
	copy(nonce, header[HeaderSize-8:])
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

// reader decrypts a stream; errors wrap ErrDecrypt.
type reader struct {
	r      *bufio.Reader
	aead   cipher.AEAD
	header []byte
	chunk  []byte
	plain  []byte
	n      uint64
	done   bool
}

func (s *reader) fail(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrDecrypt, fmt.Sprintf(format, args...))
}

func (s *reader) Read(p []byte) (int, error) {
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
func (s *reader) next() error {
	n, err := io.ReadFull(s.r, s.chunk[:cap(s.chunk)])
	switch {
	case errors.Is(err, io.EOF):
		return s.fail("truncated (no final chunk)")
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
	if n < TagSize {
		return s.fail("truncated (short chunk %d)", s.n)
	}
	if s.n > math.MaxUint32 {
		return s.fail("too many chunks")
	}
	plain, oerr := s.aead.Open(s.chunk[:0], chunkNonce(s.header, s.n), s.chunk[:n], chunkAD(s.header, s.done))
	if oerr != nil {
		return s.fail("chunk %d fails authentication: the data was truncated or modified", s.n)
	}
	s.plain = plain
	s.n++
	return nil
}
