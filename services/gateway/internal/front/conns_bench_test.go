package front

import (
	"bytes"
	"github.com/plinth-dev/plinth/libs/platform/netlimit"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// heldConns is how many idle connections BenchmarkIdleConnections holds at once.
const heldConns = 1000

// BenchmarkIdleConnections holds heldConns idle connections on the gateway's port, HTTP/1.1
// keep-alive (one request answered) or HTTP/2 (preface and settings sent, no call), and
// reports what each costs the gateway: goroutines, Go heap and stacks, and the process's
// RSS (which includes the clients' side: a bare socket each, no goroutine, no buffer).
// Run it once: `go test -run '^$' -bench IdleConnections -benchtime 1x ./internal/front/`;
// ns/op is the time to open and close them all.
func BenchmarkIdleConnections(b *testing.B) {
	for _, proto := range []string{"http1", "http2"} {
		b.Run(proto, func(b *testing.B) {
			conns := netlimit.NewConns(netlimit.ConnLimits{})
			addr := servePort(b, conns, time.Hour)
			var goroutines, heap, rss float64
			for range b.N {
				g, h, r := holdIdle(b, addr, conns, proto == "http2")
				goroutines, heap, rss = max(goroutines, g), max(heap, h), max(rss, r)
			}
			b.ReportMetric(goroutines, "goroutines/conn")
			b.ReportMetric(heap, "heap+stack-B/conn")
			b.ReportMetric(rss, "rss-B/conn")
		})
	}
}

// holdIdle opens heldConns idle connections, measures the growth per connection once the
// gateway holds them all, and closes them.
func holdIdle(b *testing.B, addr string, conns *netlimit.Conns, h2 bool) (goroutines, heap, rss float64) {
	g0, h0, r0 := usage()
	held := make([]net.Conn, 0, heldConns)
	defer func() {
		for _, c := range held {
			c.Close()
		}
		for end := time.Now().Add(within); conns.Open() > 0 && time.Now().Before(end); {
			time.Sleep(10 * time.Millisecond)
		}
	}()
	buf := make([]byte, 4096)
	for range heldConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		held = append(held, c)
		if h2 {
			// The client preface, then an empty SETTINGS frame (RFC 9113 §3.4).
			_, err = c.Write(append([]byte(nil), append(h2Preface, 0, 0, 0, 4, 0, 0, 0, 0, 0)...))
		} else {
			err = readAnswer(c, buf)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	for end := time.Now().Add(within); conns.Open() < heldConns; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			b.Fatalf("the gateway holds %d of %d connections", conns.Open(), heldConns)
		}
	}
	// Let the HTTP/2 handshakes (server settings, window updates) finish.
	time.Sleep(500 * time.Millisecond)
	g1, h1, r1 := usage()
	n := float64(heldConns)
	return float64(g1-g0) / n, float64(h1-h0) / n, float64(r1-r0) / n
}

// readAnswer makes one HTTP/1.1 request on c and reads the answer's end, through buf: no
// reader of the client's stays behind.
func readAnswer(c net.Conn, buf []byte) error {
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: gateway\r\n\r\n"); err != nil {
		return err
	}
	var got []byte
	for !bytes.HasSuffix(got, []byte("\r\n\r\nok")) {
		n, err := c.Read(buf)
		if err != nil {
			return err
		}
		got = append(got, buf[:n]...)
	}
	return nil
}

// usage is the process's goroutines, Go heap and stacks in use, and resident set, after a
// collection.
func usage() (goroutines int, heap, rss int64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b, err := os.ReadFile("/proc/self/statm")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			pages, _ := strconv.ParseInt(f[1], 10, 64)
			rss = pages * int64(os.Getpagesize())
		}
	}
	return runtime.NumGoroutine(), int64(m.HeapInuse + m.StackInuse), rss
}
