package front

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// ConnLimits bound the connections the port holds at once. The gateway is the edge: a client
// is the TCP peer's address (an IPv6 client its /64, the block one host is usually given).
// A connection over a limit is closed as soon as it is accepted, before any of it is read.
type ConnLimits struct {
	// PerClient is the most connections one client address may hold; 0: no cap.
	PerClient int
	// Total is the most connections the port holds; 0: no cap.
	Total int
}

// Conns counts the port's open connections against its ConnLimits. Serve admits every
// accepted connection through it; its counters are the gateway's connection metrics.
type Conns struct {
	limits ConnLimits

	mu     sync.Mutex
	open   int
	client map[netip.Addr]int

	refusedClient, refusedTotal atomic.Int64
}

// NewConns counts connections against l.
func NewConns(l ConnLimits) *Conns {
	return &Conns{limits: l, client: map[netip.Addr]int{}}
}

// Open is the number of connections held now.
func (c *Conns) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

// Refused counts the connections closed at accept: over the per-client cap, and over the
// total.
func (c *Conns) Refused() (perClient, total int64) {
	return c.refusedClient.Load(), c.refusedTotal.Load()
}

// admit counts conn in, or closes it and returns false when it is over a limit. An admitted
// connection is uncounted when it is first closed, by whoever closes it.
func (c *Conns) admit(conn net.Conn) (net.Conn, bool) {
	key, keyed := clientKey(conn.RemoteAddr())
	c.mu.Lock()
	switch {
	case c.limits.Total > 0 && c.open >= c.limits.Total:
		c.refusedTotal.Add(1)
	case keyed && c.limits.PerClient > 0 && c.client[key] >= c.limits.PerClient:
		c.refusedClient.Add(1)
	default:
		c.open++
		if keyed {
			c.client[key]++
		}
		c.mu.Unlock()
		return &countedConn{Conn: conn, release: func() { c.release(key, keyed) }}, true
	}
	c.mu.Unlock()
	// A reset, not a FIN: the refused socket does not linger in the gateway's TIME_WAIT.
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
	return nil, false
}

func (c *Conns) release(key netip.Addr, keyed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open--
	if keyed {
		if c.client[key]--; c.client[key] <= 0 {
			delete(c.client, key)
		}
	}
}

// clientKey is the address a connection is counted against: the TCP peer's IP, an IPv6
// peer's /64. Other networks (a unix socket) have no client address: only Total applies.
func clientKey(a net.Addr) (netip.Addr, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	ip := ta.AddrPort().Addr().Unmap()
	if ip.Is6() {
		p, err := ip.Prefix(64)
		if err != nil {
			return netip.Addr{}, false
		}
		ip = p.Addr()
	}
	return ip, ip.IsValid()
}

// countedConn gives its slot back when first closed.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
