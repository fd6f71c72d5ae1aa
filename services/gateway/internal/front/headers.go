package front

import (
	"fmt"
	"net/http"

	"connectrpc.com/connect"

	"github.com/plinth-dev/plinth/libs/platform/server"
)

// MaxHeaderListBytes bounds the headers of a call the gateway relays, counted as HTTP/2
// counts them (name + value + 32 bytes a field): the backends' limit
// (server.DefaultMaxHeaderListSize) less 1 KiB for what the gateway adds on the way
// (x-forwarded-for, the account headers, a deadline, its own pseudo-headers). The gateway's
// gRPC server announces it to gRPC clients; gRPC-Web and Connect calls, whose HTTP/1.1
// headers may reach MaxHeaderBytes, are refused over it before they are translated. Before,
// 16–32 KiB of headers reached the proxy, whose backend connection refused to send them:
// Internal, logged at ERROR, for a client's mistake (issue #36).
const MaxHeaderListBytes = server.DefaultMaxHeaderListSize - 1<<10

// headerListSize is the size of r's headers as the HTTP/2 request it becomes.
func headerListSize(r *http.Request) int {
	const perField = 32 // RFC 9113 §6.5.2
	n := len(":method") + len(r.Method) + len(":scheme") + len("https") + len(":path") + len(r.URL.RequestURI()) +
		len(":authority") + len(r.Host) + 4*perField
	for name, values := range r.Header {
		for _, v := range values {
			n += len(name) + len(v) + perField
		}
	}
	return n
}

// headersTooLarge refuses a gRPC-Web or Connect call whose headers are over
// MaxHeaderListBytes with ResourceExhausted in its protocol (the client must send fewer or
// shorter headers), and reports whether it did. Its body is never read, so the connection
// is closed.
func headersTooLarge(w http.ResponseWriter, r *http.Request) bool {
	n := headerListSize(r)
	if n <= MaxHeaderListBytes {
		return false
	}
	w.Header().Set("Connection", "close")
	errorWriter.Write(w, r, connect.NewError(connect.CodeResourceExhausted,
		fmt.Errorf("request headers too large (%d vs. %d bytes, counted as HTTP/2 counts them)", n, MaxHeaderListBytes)))
	return true
}
