package front

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestProtocolOf(t *testing.T) {
	for _, tt := range []struct {
		method, ct string
		h2         bool
		query      string
		want       string
	}{
		{"POST", "application/grpc", true, "", "grpc"},
		{"POST", "application/grpc+proto", true, "", "grpc"},
		{"POST", "application/grpc", false, "", "grpc-web"}, // HTTP/1.1 cannot carry gRPC
		{"POST", "application/grpc-web+proto", false, "", "grpc-web"},
		{"POST", "application/grpc-web-text", false, "", "grpc-web"},
		{"POST", "application/connect+proto", false, "", "connect"},
		{"POST", "application/json", false, "", "connect"},
		{"POST", "application/proto", false, "", "connect"},
		{"GET", "", false, "connect=v1&encoding=json&message=%7B%7D", "connect"},
		{"GET", "", false, "", ""},
		{"GET", "text/html", false, "", ""},
		{"POST", "text/plain", false, "", ""},
	} {
		r := httptest.NewRequest(tt.method, "/x.Y/Z?"+tt.query, nil)
		if tt.ct != "" {
			r.Header.Set("Content-Type", tt.ct)
		}
		if tt.h2 {
			r.ProtoMajor = 2
		}
		if got := protocolOf(r); got != tt.want {
			t.Errorf("%s %q h2=%v %q: got %q want %q", tt.method, tt.ct, tt.h2, tt.query, got, tt.want)
		}
	}
}

func TestCORS(t *testing.T) {
	preflight := func(c cors, origin string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodOptions, "/x.Y/Z", nil)
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		w := httptest.NewRecorder()
		if !c.handle(w, r) {
			t.Fatalf("preflight from %s not answered", origin)
		}
		return w
	}
	only := newCORS([]string{"https://console.example/"})
	if w := preflight(only, "https://console.example"); w.Code != http.StatusNoContent ||
		w.Header().Get("Access-Control-Allow-Origin") != "https://console.example" {
		t.Fatalf("allowed origin: %d %v", w.Code, w.Header())
	}
	if w := preflight(only, "https://evil.example"); w.Code != http.StatusForbidden || w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("other origin: %d %v", w.Code, w.Header())
	}
	// A same-origin or non-browser request carries no Origin: nothing to add, not answered.
	w := httptest.NewRecorder()
	if only.handle(w, httptest.NewRequest(http.MethodPost, "/x.Y/Z", nil)) || len(w.Header()) != 0 {
		t.Fatalf("no Origin: %v", w.Header())
	}
	// An actual call from an allowed origin exposes the status headers and is not answered.
	r := httptest.NewRequest(http.MethodPost, "/x.Y/Z", nil)
	r.Header.Set("Origin", "https://anything.example")
	w = httptest.NewRecorder()
	if newCORS([]string{"*"}).handle(w, r) || !strings.Contains(w.Header().Get("Access-Control-Expose-Headers"), "grpc-status-details-bin") ||
		w.Header().Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("call: %v", w.Header())
	}
}

// TestSplitRoutesByPreface: an HTTP/2 client's connection reaches the h2 side with the preface
// intact; HTTP/1.x requests, even ones shorter than the preface, reach the h1 side at once.
func TestSplitRoutesByPreface(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sp := newSplit(lis, nil, ReadHeaderTimeout)
	defer sp.close()
	for _, tt := range []struct {
		send string
		h2   bool
	}{
		{string(h2Preface) + "rest", true},
		{"GET / HTTP/1.0\r\n\r\n", false}, // 18 bytes: must not wait for 24
		{"POST /x.Y/Z HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"PRI * HTTP/1.1\r\n\r\n", false},
	} {
		c, err := net.Dial("tcp", lis.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, tt.send); err != nil {
			t.Fatal(err)
		}
		want := sp.h1
		if tt.h2 {
			want = sp.h2
		}
		got := make(chan net.Conn, 1)
		go func() {
			conn, err := want.Accept()
			if err == nil {
				got <- conn
			}
		}()
		select {
		case conn := <-got:
			_ = conn.SetReadDeadline(time.Now().Add(time.Second))
			b, _ := bufio.NewReader(conn).Peek(len(tt.send))
			if string(b) != tt.send {
				t.Errorf("%q: the accepted connection reads %q", tt.send, b)
			}
			conn.Close()
		case <-time.After(2 * time.Second):
			t.Fatalf("%q did not reach its side (h2=%v)", tt.send, tt.h2)
		}
		c.Close()
	}
	sp.close()
	if _, err := sp.h1.Accept(); err == nil {
		t.Fatal("Accept after Close must fail")
	}
}
