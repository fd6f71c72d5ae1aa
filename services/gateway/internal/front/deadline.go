package front

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// RequestBodyTimeout bounds how long an HTTP/1.1 client may take to send a request's body,
// from the end of its headers: a 4 MiB message (the routes' limit) at 1 Mbit/s takes ~35 s.
// Before, a body trickled at one byte every 5 s held its connection for as long as the
// client liked (issue #36). HTTP/1.1 bodies are sent whole before the answer (browsers have
// no bidirectional streams over it), so one deadline covers the body of every protocol.
const RequestBodyTimeout = time.Minute

// bodyDeadline gives every HTTP/1.1 request body a read deadline of d from its headers. The
// deadline is lifted once the body is read to its end: net/http then reads the connection in
// the background to notice a client that goes away, and a deadline passing there would
// cancel a long answer (a Connect server stream). A body not read by then ends with a
// timeout and the connection is closed.
func bodyDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 1 && r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(d)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// deadlineBody lifts its connection's read deadline when it reaches its end.
type deadlineBody struct {
	io.ReadCloser
	once sync.Once
	lift func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.once.Do(b.lift)
	}
	return n, err
}

// errBodyTimeout is a body that did not arrive within RequestBodyTimeout.
var errBodyTimeout = errors.New("the request body did not arrive in time")

// firstRequest closes an HTTP/2 connection that has not sent a complete request's headers
// (a HEADERS or CONTINUATION frame with END_HEADERS) within the header timeout of its
// accept, as HTTP/1.1's ReadHeaderTimeout does. grpc-go alone waits 120 s for a new
// connection's settings and then lets it idle until MaxConnectionIdle: a connection that
// sent only the preface was held 126 s (issue #36). It watches the frames grpc-go reads,
// without buffering or delaying them, only until the first request.
type firstRequest struct {
	net.Conn
	timer *time.Timer

	// What the watch has read of the frame in progress (grpc-go's reader goroutine alone
	// reads): skip bytes of payload (or of the preface), then a 9-byte frame header.
	done bool
	skip int
	head [9]byte
	n    int
}

// watchFirstRequest closes c unless it sends a complete request's headers within d. c's
// next bytes are the HTTP/2 preface.
func watchFirstRequest(c net.Conn, d time.Duration) net.Conn {
	w := &firstRequest{Conn: c, skip: len(h2Preface)}
	w.timer = time.AfterFunc(d, func() { _ = c.Close() })
	return w
}

func (w *firstRequest) Read(p []byte) (int, error) {
	n, err := w.Conn.Read(p)
	if !w.done {
		w.watch(p[:n])
	}
	return n, err
}

// HTTP/2 frame types and flag (RFC 9113 §6).
const (
	frameHeaders      = 0x1
	frameContinuation = 0x9
	flagEndHeaders    = 0x4
)

func (w *firstRequest) watch(b []byte) {
	for len(b) > 0 && !w.done {
		if w.skip > 0 {
			k := min(w.skip, len(b))
			w.skip -= k
			b = b[k:]
			continue
		}
		k := copy(w.head[w.n:], b)
		w.n += k
		b = b[k:]
		if w.n < len(w.head) {
			return
		}
		w.n = 0
		if typ := w.head[3]; (typ == frameHeaders || typ == frameContinuation) && w.head[4]&flagEndHeaders != 0 {
			w.done = true
			w.timer.Stop()
			return
		}
		w.skip = int(w.head[0])<<16 | int(w.head[1])<<8 | int(w.head[2])
	}
}
