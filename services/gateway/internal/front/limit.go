package front

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"connectrpc.com/connect"
)

// errorWriter answers a refused request in the protocol it spoke: Connect unary as JSON with
// HTTP 429 for resource_exhausted, Connect streaming as an end-stream message, gRPC-Web with
// grpc-status 8.
var errorWriter = connect.NewErrorWriter()

// readRequest reads a gRPC-Web or Connect request's message before vanguard sees the call,
// and reports whether it refused the request (the answer is written). Over HTTP/1.1 every
// routed method takes one request message (bidirectional streams need gRPC), so this is
// the whole of what the call reads, and every bound is checked here, in the client's
// protocol, before anything else works on it:
//
//   - size: a size the client announces is checked before any of the message is read (a
//     Connect unary body's Content-Length, an envelope's 5-byte prefix); a Connect unary
//     body without Content-Length is read up to limit+1 bytes, never more;
//   - compression: a message compressed with gzip is inflated here (inflate), counting to
//     limit+1; vanguard then sees an uncompressed request;
//   - time: the read ends at the body's deadline (bodyDeadline).
//
// A Connect unary body is replaced by what was read; an enveloped one (gRPC-Web, Connect
// streaming) by its first message followed by the rest of the body, read (and inflated) as
// the call reads it.
func readRequest(w http.ResponseWriter, r *http.Request, proto string, limit int) bool {
	if r.Method != http.MethodPost {
		return false // Connect's unary GET: the message is in the URL, bounded by MaxHeaderBytes
	}
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	header := "Content-Encoding"
	switch {
	case strings.HasPrefix(ct, "application/grpc"):
		header = "Grpc-Encoding"
	case strings.HasPrefix(ct, "application/connect+"):
		header = "Connect-Content-Encoding"
	}
	gzipped := strings.EqualFold(strings.TrimSpace(r.Header.Get(header)), "gzip")
	if gzipped {
		r.Header.Del(header) // inflated here; other encodings are vanguard's to refuse
	}
	if header != "Content-Encoding" {
		env := &envelopes{src: r.Body, limit: limit, gzip: gzipped}
		if err := env.next(); err != nil && !errors.Is(err, io.EOF) {
			return refuseRead(w, r, err, limit)
		}
		r.Body, r.ContentLength = readCloser{Reader: env, Closer: r.Body}, -1
		return false
	}
	if r.ContentLength > int64(limit) {
		return refuse(w, r, r.ContentLength, limit)
	}
	var body []byte
	var err error
	if r.ContentLength >= 0 {
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	}
	if err == nil && len(body) > limit {
		return refuse(w, r, int64(len(body)), limit)
	}
	if err == nil && gzipped {
		body, err = inflate(body, limit)
	}
	if err != nil {
		return refuseRead(w, r, err, limit)
	}
	r.Body, r.ContentLength = readCloser{Reader: bytes.NewReader(body), Closer: r.Body}, int64(len(body))
	return false
}

// tooLarge is a message of at least size bytes (more, when it was cut short), over limit.
type tooLarge struct{ size int64 }

func (e tooLarge) Error() string { return fmt.Sprintf("%d bytes", e.size) }

// refuse answers ResourceExhausted for a message of size bytes (at least size, when the body
// was cut short).
func refuse(w http.ResponseWriter, r *http.Request, size int64, limit int) bool {
	return refuseRead(w, r, tooLarge{size}, limit)
}

// refuseRead answers a request whose message could not be taken, and closes the connection:
// the rest of the body is never read. Why each code: over the limit (announced, read, or
// inflated) the client must send less (ResourceExhausted); a body that did not arrive within
// its deadline is DeadlineExceeded; anything else (not gzip as announced, a broken chunked
// body) is the client's malformed request (InvalidArgument).
func refuseRead(w http.ResponseWriter, r *http.Request, err error, limit int) bool {
	w.Header().Set("Connection", "close")
	var large tooLarge
	var ne net.Error
	switch {
	case errors.As(err, &large):
		err = connect.NewError(connect.CodeResourceExhausted,
			fmt.Errorf("request message larger than max (%d vs. %d bytes): %s accepts at most %d", large.size, limit, r.URL.Path, limit))
	case errors.Is(err, errTooLarge):
		err = connect.NewError(connect.CodeResourceExhausted,
			fmt.Errorf("request message larger than max after decompression: %s accepts at most %d bytes", r.URL.Path, limit))
	case errors.As(err, &ne) && ne.Timeout():
		err = connect.NewError(connect.CodeDeadlineExceeded, errBodyTimeout)
	case errors.Is(err, errNotGzip):
		err = connect.NewError(connect.CodeInvalidArgument, errNotGzip)
	case errors.Is(err, errTruncated):
		err = connect.NewError(connect.CodeInvalidArgument, errTruncated)
	default:
		err = connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("read the request body: %w", err))
	}
	errorWriter.Write(w, r, err)
	return true
}

// readCloser reads from Reader and closes Closer.
type readCloser struct {
	io.Reader
	io.Closer
}
