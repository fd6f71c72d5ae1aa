// Package netlimit caps what one client address may hold on a port: connections, closed at
// accept over their cap, and calls in progress across its connections, refused with
// ResourceExhausted over theirs. The gateway's port and every service's own gRPC port use it.
package netlimit

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// ClientKey is the address a connection or call is counted against: the TCP peer's IP, an
// IPv6 peer's /64 (the block one host is usually given). Other networks have no client
// address: every peer of a unix socket has the same empty one, so no per-address cap can
// tell them apart.
func ClientKey(a net.Addr) (netip.Addr, bool) {
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

// peerKey is ClientKey for a call's peer: a *net.TCPAddr on grpc-go's own HTTP/2
// transport, the HTTP request's "ip:port" for calls that came over HTTP/1.1 (the gateway's
// gRPC-Web and Connect calls).
func peerKey(a net.Addr) (netip.Addr, bool) {
	if _, ok := a.(*net.TCPAddr); ok || a == nil || a.Network() != "tcp" {
		return ClientKey(a)
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ClientKey(net.TCPAddrFromAddrPort(ap))
}

// LogEvery is how often a refusal is logged per client address: the first refusal is, the
// next ones within LogEvery only counted, so a flood of refused connections or calls does
// not flood the log.
const LogEvery = time.Minute

// maxLogged bounds the addresses a refusalLog remembers: beyond, a refused address not yet
// remembered is counted but not logged until older entries pass LogEvery, so a flood from
// many addresses grows neither the log nor the memory without bound.
const maxLogged = 4096

// refusalLog logs refusals at INFO, at most once per client address per LogEvery.
type refusalLog struct {
	log *slog.Logger // nil: never logs
	msg string
	now func() time.Time

	mu   sync.Mutex
	last map[netip.Addr]time.Time
}

func newRefusalLog(log *slog.Logger, msg string) *refusalLog {
	return &refusalLog{log: log, msg: msg, now: time.Now, last: map[netip.Addr]time.Time{}}
}

// note logs the refusal of key with attrs, unless key's last refusal was logged less than
// LogEvery ago.
func (r *refusalLog) note(key netip.Addr, attrs ...any) {
	if r.log == nil {
		return
	}
	now := r.now()
	r.mu.Lock()
	if t, ok := r.last[key]; ok && now.Sub(t) < LogEvery {
		r.mu.Unlock()
		return
	}
	if len(r.last) >= maxLogged {
		for k, t := range r.last {
			if now.Sub(t) >= LogEvery {
				delete(r.last, k)
			}
		}
		if len(r.last) >= maxLogged {
			r.mu.Unlock()
			return
		}
	}
	r.last[key] = now
	r.mu.Unlock()
	r.log.Info(r.msg, append([]any{"client", key.String(), "log_every", LogEvery.String()}, attrs...)...)
}
