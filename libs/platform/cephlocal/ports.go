package cephlocal

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/plinth-dev/plinth/libs/platform/ports"
)

// BlockSize is how many consecutive ports one cluster takes from its base: five fixed ones
// (mon msgr2 and legacy, prometheus, dashboard, radosgw) and a range the mgr, OSD and
// radosgw messengers bind in (the OSD alone binds eight).
const BlockSize = 40

// Ports are one cluster's loopback ports.
type Ports struct {
	MonV2, MonV1, Prometheus, Dashboard, RGW int
	// DaemonMin and DaemonMax bound the messengers' ports (ms bind port min/max).
	DaemonMin, DaemonMax int
}

// PortsAt lays a cluster's ports out from base to base+BlockSize-1.
func PortsAt(base int) Ports {
	return Ports{MonV2: base, MonV1: base + 1, Prometheus: base + 2, Dashboard: base + 3, RGW: base + 4,
		DaemonMin: base + 8, DaemonMax: base + BlockSize - 1}
}

// Base is the first port of the block.
func (p Ports) Base() int { return p.MonV2 }

// Busy reports the first port of the block that something listens on, or 0.
func (p Ports) Busy() int {
	for port := p.Base(); port <= p.DaemonMax; port++ {
		if !ports.IsFree(port) {
			return port
		}
	}
	return 0
}

func (p Ports) validate() error {
	if p.MonV2 <= 0 || p.DaemonMax > 65535 || p != PortsAt(p.Base()) {
		return errors.New("cephlocal: Options.Ports must come from PortsAt(base) with 0 < base <= 65535-BlockSize")
	}
	return nil
}

// FreePorts picks a block whose ports are all free, in ports.Min..ports.Max (below Linux's
// ephemeral range). Another process may take one before the daemons bind it; they then fail
// loudly.
func FreePorts() (Ports, error) {
	for range 200 {
		base := ports.Min + BlockSize*rand.IntN((ports.Max-ports.Min)/BlockSize-1)
		if p := PortsAt(base); p.Busy() == 0 {
			return p, nil
		}
	}
	return Ports{}, fmt.Errorf("cephlocal: no free block of %d ports in %d-%d", BlockSize, ports.Min, ports.Max)
}
