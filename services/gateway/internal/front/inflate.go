package front

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/net/http2"
)

// Compressed requests are inflated at the front (readRequest), never by vanguard: vanguard's
// decompressor inflates a whole message into memory before anything counts it (a 255 KB
// gzip body to Login became 256 MiB of heap, issue #36), and its only bound is the buffer
// limit of the largest route. Here every message stops inflating at its route's limit + 1
// bytes, and is first inflated into nothing, only counted: a message over the limit costs
// the gzip reader's state and the CPU of limit + 1 bytes, whatever it would have inflated
// to, and one under it is inflated a second time into a buffer of exactly its size. Vanguard
// then sees an uncompressed request (and the gateway's gRPC server behind it, in the same
// process, has nothing to inflate). Responses are compressed as the client asked, untouched.

var (
	// errTooLarge is a message that inflates to more than its route's limit.
	errTooLarge = errors.New("inflates to more than the limit")
	// errNotGzip is a message that its encoding header says is gzip, and is not.
	errNotGzip = errors.New("the request message is not valid gzip, as its encoding header says")
)

// gzipReaders keeps gzip readers (their window and tables, ~40 KiB each) between requests.
var gzipReaders sync.Pool

// inflate returns the gzip data inflated: errTooLarge when that would be more than limit
// bytes, errNotGzip when it is not gzip.
func inflate(data []byte, limit int) ([]byte, error) {
	n, err := inflateInto(io.Discard, data, int64(limit)+1)
	if err != nil {
		return nil, err
	}
	if n > int64(limit) {
		return nil, errTooLarge
	}
	out := bytes.NewBuffer(make([]byte, 0, n))
	if _, err := inflateInto(out, data, n); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// inflateInto writes at most max bytes of the gzip data inflated to w, and how many.
func inflateInto(w io.Writer, data []byte, max int64) (int64, error) {
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(bytes.NewReader(data))
	} else {
		err = zr.Reset(bytes.NewReader(data))
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errNotGzip, err)
	}
	defer gzipReaders.Put(zr)
	n, err := io.Copy(w, io.LimitReader(zr, max))
	if err == nil && n < max {
		// The whole stream was read: let the reader check its checksum and length.
		_, err = io.Copy(io.Discard, zr)
	}
	if err != nil {
		return n, fmt.Errorf("%w: %w", errNotGzip, err)
	}
	return n, nil
}

// envelopes reads an enveloped body (gRPC-Web, Connect streaming) a message at a time,
// refusing one over the limit before reading it and, when the body is gzip, inflating each
// compressed message and clearing its flag. readRequest reads the first message (the only
// one of any call over HTTP/1.1) and answers its errors; a later one that cannot be taken
// ends the body with an HTTP/2 stream error, which the gateway's gRPC server (grpc-go's
// handler transport) reports to the call by its code: ENHANCE_YOUR_CALM is ResourceExhausted.
type envelopes struct {
	src   io.Reader
	limit int
	gzip  bool
	cur   []byte // the current message with its prefix, not yet read
	err   error
}

// Read implements io.Reader.
func (e *envelopes) Read(p []byte) (int, error) {
	for len(e.cur) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		if err := e.next(); err != nil {
			e.err = err
			if !errors.Is(err, io.EOF) {
				e.err = streamError(err)
			}
		}
	}
	n := copy(p, e.cur)
	e.cur = e.cur[n:]
	return n, nil
}

// next reads the next message into cur: io.EOF at the end of the body, errTruncated when it
// ends inside a message, tooLarge for a message whose prefix is over the limit, errTooLarge
// or errNotGzip for one that does not inflate, or the read's error.
func (e *envelopes) next() error {
	var prefix [5]byte
	if n, err := io.ReadFull(e.src, prefix[:]); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return io.EOF
		}
		return truncated(err)
	}
	size := binary.BigEndian.Uint32(prefix[1:])
	if int64(size) > int64(e.limit) {
		return tooLarge{int64(size)}
	}
	msg := make([]byte, size)
	if _, err := io.ReadFull(e.src, msg); err != nil {
		return truncated(err)
	}
	if e.gzip && prefix[0]&1 != 0 {
		var err error
		if msg, err = inflate(msg, e.limit); err != nil {
			return err
		}
		prefix[0] &^= 1
		binary.BigEndian.PutUint32(prefix[1:], uint32(len(msg)))
	}
	e.cur = append(prefix[:], msg...)
	return nil
}

// errTruncated is a body that ends inside a message (vanguard passed it on to grpc-go, whose
// "unexpected EOF" the gateway answered and logged as Internal).
var errTruncated = errors.New("the request body ends inside a message")

// truncated is errTruncated for a body that ended, else the read's error.
func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errTruncated
	}
	return err
}

// streamError is the error that ends the body at a later message that cannot be taken. It
// is returned as is: grpc-go recognises it by its type, not through wrapping.
func streamError(err error) error {
	var large tooLarge
	if errors.As(err, &large) || errors.Is(err, errTooLarge) {
		return http2.StreamError{Code: http2.ErrCodeEnhanceYourCalm, Cause: errors.New("request message larger than max")}
	}
	return http2.StreamError{Code: http2.ErrCodeProtocol, Cause: err}
}
