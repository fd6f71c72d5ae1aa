package launcher

import (
	"net"
	"strconv"
	"time"
)

// portFree reports whether 127.0.0.1:port can be bound now. Another process may take it
// before the child binds it; the child then fails loudly, which is the best anyone can do.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// answering reports whether something accepts TCP connections at addr.
func answering(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
