package front

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/netlimit"
)

// h2Preface opens every cleartext HTTP/2 connection with prior knowledge (RFC 9113 §3.4):
// how gRPC clients connect. Browsers never speak h2c; they reach the port over HTTP/1.1.
var h2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")

// split hands each accepted connection to one of two listeners by its first bytes: HTTP/2
// prior knowledge (gRPC clients) to h2, everything else (HTTP/1.1: browsers, Connect and
// gRPC-Web clients, the console) to h1. gRPC then runs on grpc-go's own HTTP/2 transport,
// several times cheaper per call than grpc-go's net/http handler mode. Every connection is
// first admitted by conns (the connection caps), before any of it is read.
type split struct {
	lis    net.Listener
	conns  *netlimit.Conns
	h1, h2 *subListener
	once   sync.Once
	// headerTimeout bounds the wait for a connection's first bytes, and an HTTP/2
	// connection's first request (watchFirstRequest).
	headerTimeout time.Duration
}

func newSplit(lis net.Listener, conns *netlimit.Conns, headerTimeout time.Duration) *split {
	if conns == nil {
		conns = netlimit.NewConns(netlimit.ConnLimits{})
	}
	s := &split{lis: lis, conns: conns, headerTimeout: headerTimeout}
	done := make(chan struct{})
	s.h1 = &subListener{addr: lis.Addr(), conns: make(chan net.Conn), done: done, close: s.close}
	s.h2 = &subListener{addr: lis.Addr(), conns: make(chan net.Conn), done: done, close: s.close}
	go s.accept(done)
	return s
}

func (s *split) close() error {
	var err error
	s.once.Do(func() { err = s.lis.Close() })
	return err
}

// maxAcceptDelay caps the pause after a failed Accept.
const maxAcceptDelay = time.Second

// accept hands every admitted connection to route until the listener is closed. A failed
// Accept that is not the listener closing (out of file descriptors: EMFILE, ENFILE; an
// aborted handshake) is waited out, as net/http does, instead of ending the port: a flood
// of connections must not stop the gateway serving.
func (s *split) accept(done chan struct{}) {
	defer close(done)
	var delay time.Duration
	for {
		c, err := s.lis.Accept()
		if err != nil {
			if !retryable(err) {
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), maxAcceptDelay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		if c, ok := s.conns.Admit(c); ok {
			go s.route(c, done)
		}
	}
}

// retryable reports an Accept error that passes: a timeout, the process or the system out
// of file descriptors or buffers, a connection aborted before it was accepted. Anything else
// (the listener closed) ends the port.
func retryable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// route reads as much of the connection's start as it takes to tell: an HTTP/1.1 request
// differs from the preface within its first two bytes, so only an HTTP/2 client waits for
// the whole preface.
func (s *split) route(c net.Conn, done chan struct{}) {
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(s.headerTimeout))
	r := bufio.NewReaderSize(c, 4096)
	isH2 := true
	for n := 1; n <= len(h2Preface); n++ {
		b, err := r.Peek(n)
		if err != nil {
			_ = c.Close()
			return
		}
		if !bytes.Equal(b, h2Preface[:n]) {
			isH2 = false
			break
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	dst, conn := s.h1, net.Conn(&peekedConn{Conn: c, r: r})
	if isH2 {
		dst, conn = s.h2, watchFirstRequest(conn, s.headerTimeout-time.Since(start))
	}
	select {
	case dst.conns <- conn:
	case <-done:
		_ = c.Close()
	}
}

// subListener is one side of a split.
type subListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	close func() error
}

// Accept implements net.Listener.
func (l *subListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close closes the shared listener (both sides).
func (l *subListener) Close() error { return l.close() }

// Addr implements net.Listener.
func (l *subListener) Addr() net.Addr { return l.addr }

// peekedConn reads first what route peeked.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
