// Package ports finds free TCP ports on 127.0.0.1 for servers a process starts itself (a
// private Postgres, an embedded cluster in tests). It picks below Linux's ephemeral range
// (32768 and up), where outgoing connections take ports at random and could grab one between
// the check and the bind.
package ports

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
)

// The range Free picks from. Below Min are fixed ports: the suite's own (4222, 7000..7339,
// 8080, 8180) and those of the e2e tests, which shift them by offsets up to ~16,000.
const (
	Min = 25000
	Max = 32767
)

// IsFree reports whether 127.0.0.1:port can be bound now. Another process may still take it
// before the caller binds: callers that start a server retry with fresh ports.
func IsFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// Free returns n distinct ports in [Min, Max] that nothing listens on now.
func Free(n int) ([]int, error) {
	out := make([]int, 0, n)
	for range 50 * max(n, 4) {
		if len(out) == n {
			return out, nil
		}
		p := Min + rand.IntN(Max-Min+1)
		if !slices.Contains(out, p) && IsFree(p) {
			out = append(out, p)
		}
	}
	if len(out) == n {
		return out, nil
	}
	return nil, fmt.Errorf("no %d free TCP ports in %d-%d on 127.0.0.1", n, Min, Max)
}
