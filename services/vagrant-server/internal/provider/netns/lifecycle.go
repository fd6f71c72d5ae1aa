package netns

import (
	"context"
	"fmt"
	"net/netip"
	"os"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
)

// Up creates machine id when missing — namespace, veth pair into the bridge, an address —
// and brings its links up. Each step checks first, so Up also finishes a machine a crashed
// Up left half made, and restarts a halted one with the address it had.
func (p *Provider) Up(ctx context.Context, id string) error {
	unlock, err := p.lockMachine(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	if err := p.ensureBridge(ctx); err != nil {
		return err
	}
	ns, host := p.Namespace(id), p.hostLink(id)
	exists, err := p.namespaceExists(ctx, ns)
	if err != nil {
		return err
	}
	if !exists {
		if _, err := p.ip(ctx, "netns", "add", ns); err != nil {
			return err
		}
	}
	guest, ok, err := p.findLink(ctx, ns, guestLink)
	if err != nil {
		return err
	}
	if !ok {
		// The peer is created straight inside the namespace, so it never appears on the host.
		if _, err := p.ip(ctx, "link", "add", host, "type", "veth", "peer", "name", guestLink, "netns", ns); err != nil {
			return err
		}
	}
	if !hasAddrIn(guest.ipv4(), p.o.Subnet) {
		addr, err := p.allocate(ctx)
		if err != nil {
			return err
		}
		if _, err := p.ip(ctx, "-n", ns, "addr", "add", addr.String(), "dev", guestLink); err != nil {
			return err
		}
		// The address may have been a destroyed machine's: the host's neighbour entry would
		// still send its packets to that machine's MAC until it goes stale (15-45 s), and a
		// client on the host (kaas probing a new cluster's API server) would time out.
		if _, err := p.ip(ctx, "neigh", "flush", "to", addr.Addr().String(), "dev", p.o.Bridge); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"link", "set", host, "master", p.o.Bridge, "up"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "link", "set", guestLink, "up"},
	} {
		if _, err := p.ip(ctx, args...); err != nil {
			return err
		}
	}
	if p.sb != nil {
		return p.startContainer(ctx, id)
	}
	return nil
}

// Halt stops every process in machine id and takes its links down. The namespace and its
// address stay, so Up brings the same machine back. A machine that does not exist is left so.
func (p *Provider) Halt(ctx context.Context, id string) error {
	unlock, err := p.lockMachine(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	ns := p.Namespace(id)
	if exists, err := p.namespaceExists(ctx, ns); err != nil || !exists {
		return err
	}
	if p.sb != nil {
		if err := p.stopContainer(ctx, ns); err != nil {
			return err
		}
	}
	// Also without a sandbox, and in case something else entered the namespace.
	if err := p.stopProcesses(ctx, ns); err != nil {
		return err
	}
	if _, ok, err := p.findLink(ctx, ns, guestLink); err != nil {
		return err
	} else if ok {
		if _, err := p.ip(ctx, "-n", ns, "link", "set", guestLink, "down"); err != nil {
			return err
		}
	}
	if _, ok, err := p.findLink(ctx, "", p.hostLink(id)); err != nil {
		return err
	} else if ok {
		_, err = p.ip(ctx, "link", "set", p.hostLink(id), "down")
		return err
	}
	return nil
}

// Destroy stops every process in machine id and removes its veth pair and namespace; what is
// already gone is skipped.
func (p *Provider) Destroy(ctx context.Context, id string) error {
	unlock, err := p.lockMachine(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	ns := p.Namespace(id)
	if p.sb != nil {
		// The container and its disk go first, whether or not the namespace is there (a
		// host restart takes /run/netns, not the disk).
		if err := p.stopContainer(ctx, ns); err != nil {
			return err
		}
		if err := os.RemoveAll(p.sb.bundle(ns)); err != nil {
			return fmt.Errorf("remove the machine's disk: %w", err)
		}
	}
	exists, err := p.namespaceExists(ctx, ns)
	if err != nil {
		return err
	}
	if exists {
		// A namespace lives on while a process is in it, and its veth with it.
		if err := p.stopProcesses(ctx, ns); err != nil {
			return err
		}
	}
	if _, ok, err := p.findLink(ctx, "", p.hostLink(id)); err != nil {
		return err
	} else if ok {
		if _, err := p.ip(ctx, "link", "del", p.hostLink(id)); err != nil {
			return err
		}
	}
	if exists {
		if _, err := p.ip(ctx, "netns", "del", ns); err != nil {
			return err
		}
	}
	return nil
}

// Status reports running (namespace with its link up), poweroff (halted, or left half made by
// a failed Up: run up again) or not_created.
func (p *Provider) Status(ctx context.Context, id string) (provider.State, error) {
	if err := p.ValidID(id); err != nil {
		return provider.State{}, err
	}
	ns := p.Namespace(id)
	exists, err := p.namespaceExists(ctx, ns)
	if err != nil {
		return provider.State{}, err
	}
	if !exists {
		return provider.State{ID: provider.StateNotCreated, Short: "not created",
			Long: "The machine is not created. Run `up` to create it."}, nil
	}
	guest, ok, err := p.findLink(ctx, ns, guestLink)
	if err != nil {
		return provider.State{}, err
	}
	addr := firstIn(guest.ipv4(), p.o.Subnet)
	running := true
	if p.sb != nil && ok && guest.up() {
		status, err := p.containerStatus(ctx, ns)
		if err != nil {
			return provider.State{}, err
		}
		running = status == "running"
	}
	switch {
	case ok && guest.up() && addr.IsValid() && running:
		return provider.State{ID: provider.StateRunning, Short: "running",
			Long: fmt.Sprintf("The machine is running in network namespace %s at %s on bridge %s.", ns, addr, p.o.Bridge)}, nil
	case ok && addr.IsValid():
		return provider.State{ID: provider.StatePoweroff, Short: "poweroff",
			Long: fmt.Sprintf("The machine is halted (network namespace %s, address %s kept). Run `up` to start it.", ns, addr)}, nil
	}
	return provider.State{ID: provider.StatePoweroff, Short: "poweroff",
		Long: fmt.Sprintf("The machine's network namespace %s is incomplete (an interrupted up). Run `up` to finish it or `destroy` to remove it.", ns)}, nil
}

// Address returns machine id's address and prefix length, or ok=false when it has none.
func (p *Provider) Address(ctx context.Context, id string) (addr netip.Prefix, ok bool, err error) {
	if err := p.ValidID(id); err != nil {
		return netip.Prefix{}, false, err
	}
	ns := p.Namespace(id)
	if exists, err := p.namespaceExists(ctx, ns); err != nil || !exists {
		return netip.Prefix{}, false, err
	}
	guest, found, err := p.findLink(ctx, ns, guestLink)
	if err != nil || !found {
		return netip.Prefix{}, false, err
	}
	a := firstIn(guest.ipv4(), p.o.Subnet)
	return a, a.IsValid(), nil
}

func hasAddrIn(addrs []netip.Prefix, subnet netip.Prefix) bool {
	return firstIn(addrs, subnet).IsValid()
}

func firstIn(addrs []netip.Prefix, subnet netip.Prefix) netip.Prefix {
	for _, a := range addrs {
		if subnet.Contains(a.Addr()) {
			return a
		}
	}
	return netip.Prefix{}
}

// lockMachine checks id and takes the provider's lock, as Up, Halt and Destroy do first; the
// caller runs unlock when done.
func (p *Provider) lockMachine(ctx context.Context, id string) (unlock func(), err error) {
	if err := p.ValidID(id); err != nil {
		return nil, err
	}
	return p.lock(ctx)
}
