package cephtest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
)

// blockSize is how many consecutive ports one cluster takes: five fixed ones (mon msgr2 and
// legacy, prometheus, dashboard, radosgw) and a range the mgr, OSD and radosgw messengers
// bind in (the OSD alone binds eight).
const blockSize = 40

// ports are one cluster's loopback ports.
type ports struct {
	monV2, monV1, prometheus, dashboard, rgw int
	daemonMin, daemonMax                     int
}

var (
	blocksMu sync.Mutex
	blocks   = map[int]bool{} // bases held by clusters of this test binary
)

// reservePorts picks a block whose ports are all free, below Linux's ephemeral range (32768),
// where outgoing connections would take them. Blocks of clusters in this process never
// overlap; other processes are avoided by probing.
func reservePorts(t testing.TB) ports {
	blocksMu.Lock()
	defer blocksMu.Unlock()
	for range 200 {
		base := 20000 + blockSize*rand.IntN((32768-20000)/blockSize-1)
		if blocks[base] || !allFree(base, blockSize) {
			continue
		}
		blocks[base] = true
		t.Cleanup(func() {
			blocksMu.Lock()
			delete(blocks, base)
			blocksMu.Unlock()
		})
		return ports{monV2: base, monV1: base + 1, prometheus: base + 2, dashboard: base + 3, rgw: base + 4,
			daemonMin: base + 8, daemonMax: base + blockSize - 1}
	}
	t.Fatal("cephtest: no free block of ports in 20000-32767")
	return ports{}
}

func allFree(base, n int) bool {
	for p := base; p < base+n; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return false
		}
		_ = l.Close()
	}
	return true
}
