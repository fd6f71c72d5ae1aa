package netns

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
)

// lock serialises the changes of every runner on this host that uses the same bridge: address
// allocation must not hand one address to two machines. It is an flock, so it dies with the
// process that held it.
func (p *Provider) lock(ctx context.Context) (unlock func(), err error) {
	if err := os.MkdirAll(p.o.LockDir, 0o755); err != nil {
		return nil, fmt.Errorf("netns lock directory: %w", err)
	}
	path := filepath.Join(p.o.LockDir, "plinth-netns-"+p.o.Bridge+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("netns lock: %w", err)
	}
	locked := make(chan error, 1)
	go func() { locked <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-locked:
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("netns lock %s: %w", path, err)
		}
		return func() { _ = f.Close() }, nil // closing the file releases the flock
	case <-ctx.Done():
		// The flock call still waits; release the lock as soon as it is granted.
		go func() { <-locked; _ = f.Close() }()
		return nil, context.Cause(ctx)
	}
}

// ensureBridge creates the bridge with the gateway address when missing and brings it up. It
// refuses to reuse an interface of that name that is not a bridge, and a subnet that another
// host interface already has an address in: machines must never shadow a real network.
func (p *Provider) ensureBridge(ctx context.Context) error {
	hostLinks, err := p.links(ctx, "", "")
	if err != nil {
		return err
	}
	var bridge *link
	for i, l := range hostLinks {
		if l.Name == p.o.Bridge {
			bridge = &hostLinks[i]
			continue
		}
		for _, a := range l.ipv4() {
			if a.Overlaps(p.o.Subnet) {
				return fmt.Errorf("subnet %s overlaps %s on host interface %s: choose another subnet (PLINTH_VAGRANT_NETNS_SUBNET)",
					p.o.Subnet, a, l.Name)
			}
		}
	}
	if bridge == nil {
		if _, err := p.ip(ctx, "link", "add", p.o.Bridge, "type", "bridge"); err != nil {
			return err
		}
		bridge = &link{Name: p.o.Bridge}
		bridge.LinkInfo.Kind = "bridge"
	}
	if bridge.LinkInfo.Kind != "bridge" {
		return fmt.Errorf("host interface %s exists and is a %q, not a bridge: remove it or choose another bridge name (PLINTH_VAGRANT_NETNS_BRIDGE)",
			p.o.Bridge, bridge.LinkInfo.Kind)
	}
	gw := netip.PrefixFrom(p.gateway, p.o.Subnet.Bits())
	hasGateway := false
	for _, a := range bridge.ipv4() {
		hasGateway = hasGateway || a == gw
	}
	if !hasGateway {
		if _, err := p.ip(ctx, "addr", "add", gw.String(), "dev", p.o.Bridge); err != nil {
			return err
		}
	}
	if !bridge.up() {
		if _, err := p.ip(ctx, "link", "set", p.o.Bridge, "up"); err != nil {
			return err
		}
	}
	return nil
}

// usedAddresses returns the addresses the provider's machines hold (halted ones keep theirs).
func (p *Provider) usedAddresses(ctx context.Context) (map[netip.Addr]bool, error) {
	names, err := p.namespaces(ctx)
	if err != nil {
		return nil, err
	}
	used := map[netip.Addr]bool{p.gateway: true}
	for _, ns := range names {
		l, ok, err := p.findLink(ctx, ns, guestLink)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		for _, a := range l.ipv4() {
			used[a.Addr()] = true
		}
	}
	return used, nil
}

// allocate returns the lowest free machine address of the subnet. The caller holds the lock.
func (p *Provider) allocate(ctx context.Context) (netip.Prefix, error) {
	used, err := p.usedAddresses(ctx)
	if err != nil {
		return netip.Prefix{}, err
	}
	broadcast := lastAddr(p.o.Subnet)
	for a := p.gateway.Next(); a.IsValid() && a.Less(broadcast); a = a.Next() {
		if !used[a] {
			return netip.PrefixFrom(a, p.o.Subnet.Bits()), nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("subnet %s has no free address left: destroy machines or use a larger subnet", p.o.Subnet)
}

// lastAddr is the subnet's broadcast address.
func lastAddr(pfx netip.Prefix) netip.Addr {
	b := pfx.Masked().Addr().As4()
	hostBits := 32 - pfx.Bits()
	for i := 3; i >= 0 && hostBits > 0; i-- {
		n := min(hostBits, 8)
		b[i] |= byte(1<<n - 1)
		hostBits -= n
	}
	return netip.AddrFrom4(b)
}
