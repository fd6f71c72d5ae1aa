package netlimit

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// ConnLimits bound the connections a port holds at once. A connection over a limit is
// closed as soon as it is accepted, before any of it is read.
type ConnLimits struct {
	// PerClient is the most connections one client address (ClientKey) may hold; 0: no cap.
	PerClient int
	// Total is the most connections the port holds; 0: no cap.
	Total int
	// PerClientSetting and TotalSetting name the settings of the limits, for the metrics'
	// help and the log.
	PerClientSetting, TotalSetting string
	// Log, when set, receives an INFO line when a client address is refused, at most once
	// per address per LogEvery; nil: refusals are only counted.
	Log *slog.Logger
}

// Conns counts a port's open connections against its ConnLimits. Admit (or a Listener)
// admits every accepted connection; its counters are the port's connection metrics.
type Conns struct {
	limits ConnLimits
	log    *refusalLog

	mu     sync.Mutex
	open   int
	client map[netip.Addr]int

	refusedClient, refusedTotal atomic.Int64
}

// NewConns counts connections against l.
func NewConns(l ConnLimits) *Conns {
	return &Conns{limits: l, client: map[netip.Addr]int{},
		log: newRefusalLog(l.Log, "connection closed at accept: too many from this client address")}
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

// Admit counts conn in, or closes it and returns false when it is over a limit. An admitted
// connection is uncounted when it is first closed, by whoever closes it.
func (c *Conns) Admit(conn net.Conn) (net.Conn, bool) {
	key, keyed := ClientKey(conn.RemoteAddr())
	c.mu.Lock()
	switch {
	case c.limits.Total > 0 && c.open >= c.limits.Total:
		c.refusedTotal.Add(1)
	case keyed && c.limits.PerClient > 0 && c.client[key] >= c.limits.PerClient:
		c.refusedClient.Add(1)
		c.mu.Unlock()
		c.log.note(key, "limit", c.limits.PerClient, "setting", c.limits.PerClientSetting)
		reset(conn)
		return nil, false
	default:
		c.open++
		if keyed {
			c.client[key]++
		}
		c.mu.Unlock()
		return &countedConn{Conn: conn, release: func() { c.release(key, keyed) }}, true
	}
	c.mu.Unlock()
	reset(conn)
	return nil, false
}

// reset closes a refused connection with a reset, not a FIN: the refused socket does not
// linger in the server's TIME_WAIT.
func reset(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
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

// Listener is lis with every accepted connection admitted by c: one over a limit is closed
// at once, and Accept waits for the next.
func (c *Conns) Listener(lis net.Listener) net.Listener { return &admitting{Listener: lis, conns: c} }

type admitting struct {
	net.Listener
	conns *Conns
}

func (l *admitting) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if conn, ok := l.conns.Admit(conn); ok {
			return conn, nil
		}
	}
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
