package launcher

import (
	"net"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/ports"
)

// portFree reports whether 127.0.0.1:port can be bound now. Another process may take it
// before the child binds it; the child then fails loudly, which is the best anyone can do.
var portFree = ports.IsFree

// answering reports whether something accepts TCP connections at addr.
func answering(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
