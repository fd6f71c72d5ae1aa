package front

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strings"

	"connectrpc.com/connect"
)

// errorWriter answers a refused request in the protocol it spoke: Connect unary as JSON with
// HTTP 429 for resource_exhausted, Connect streaming as an end-stream message, gRPC-Web with
// grpc-status 8.
var errorWriter = connect.NewErrorWriter()

// bound refuses a gRPC-Web or Connect request whose message is larger than limit before
// reading it, and reports whether it did (the answer is written). A size the client
// announces is checked before any of the body is read: a Connect unary body's Content-Length,
// an enveloped message's 5-byte prefix (the first one here; later ones vanguard checks
// against the same limit). A Connect unary body without Content-Length is read up to limit+1
// bytes, never more, and r.Body replaced with what was read.
func bound(w http.ResponseWriter, r *http.Request, limit int) bool {
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	if r.Method != http.MethodPost {
		return false // Connect's unary GET: the message is in the URL, bounded by MaxHeaderBytes
	}
	if strings.HasPrefix(ct, "application/grpc") || strings.HasPrefix(ct, "application/connect+") {
		var prefix [5]byte
		n, err := io.ReadFull(r.Body, prefix[:])
		if err == nil {
			if size := binary.BigEndian.Uint32(prefix[1:]); int64(size) > int64(limit) {
				return refuse(w, r, int64(size), limit)
			}
		}
		r.Body = readCloser{Reader: io.MultiReader(bytes.NewReader(prefix[:n]), r.Body), Closer: r.Body}
		return false
	}
	if r.ContentLength > int64(limit) {
		return refuse(w, r, r.ContentLength, limit)
	}
	if r.ContentLength >= 0 {
		return false
	}
	// No Content-Length (chunked): read at most limit+1 bytes to learn the size.
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		errorWriter.Write(w, r, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("read the request body: %w", err)))
		return true
	}
	if n > int64(limit) {
		return refuse(w, r, n, limit)
	}
	r.Body = readCloser{Reader: &buf, Closer: r.Body}
	r.ContentLength = n
	return false
}

// refuse answers ResourceExhausted for a message of size bytes (at least size, when the body
// was cut short) and closes the connection: the rest of the body is never read.
func refuse(w http.ResponseWriter, r *http.Request, size int64, limit int) bool {
	w.Header().Set("Connection", "close")
	errorWriter.Write(w, r, connect.NewError(connect.CodeResourceExhausted,
		fmt.Errorf("request message larger than max (%d vs. %d bytes): %s accepts at most %d", size, limit, r.URL.Path, limit)))
	return true
}

// readCloser reads from Reader and closes Closer.
type readCloser struct {
	io.Reader
	io.Closer
}
