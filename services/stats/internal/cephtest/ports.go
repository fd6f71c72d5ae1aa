package cephtest

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/cephlocal"
	"github.com/plinth-dev/plinth/libs/platform/ports"
)

var (
	blocksMu sync.Mutex
	blocks   = map[int]bool{} // bases held by clusters of this test binary
)

// ReservePorts picks a free block of cephlocal.BlockSize ports below Linux's ephemeral range.
// Blocks of clusters in this test binary never overlap, also while their daemons have not
// bound yet (parallel tests); other processes are avoided by probing.
func ReservePorts(t testing.TB) cephlocal.Ports {
	blocksMu.Lock()
	defer blocksMu.Unlock()
	for range 200 {
		base := ports.Min + cephlocal.BlockSize*rand.IntN((ports.Max-ports.Min)/cephlocal.BlockSize-1)
		p := cephlocal.PortsAt(base)
		if blocks[base] || p.Busy() != 0 {
			continue
		}
		blocks[base] = true
		t.Cleanup(func() {
			blocksMu.Lock()
			delete(blocks, base)
			blocksMu.Unlock()
		})
		return p
	}
	t.Fatalf("cephtest: no free block of ports in %d-%d", ports.Min, ports.Max)
	return cephlocal.Ports{}
}
