// Package netns is vagrant-runner's built-in machine provider for a plain Linux host: a machine
// is a network namespace (`ip netns add plinth-<id>`) joined by a veth pair to a private bridge
// (plinth-br0) on a private subnet (10.213.0.0/24) that exists only on this host, with its own
// address. With a Sandbox (the runner's default) the machine is also a runc container in that
// namespace — its own users, filesystem, processes and cgroup limits — and commands run in it
// with `runc exec`; without one they run with `ip netns exec`. It needs root and iproute2
// (and runc and tini for the sandbox).
//
// Nothing here routes traffic off the host: the namespaces get no default route, the host's
// forwarding and firewall settings are left alone, and the bridge holds only the machines'
// veths, so a machine reaches the other machines and the host's bridge address, nothing else.
package netns

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os/exec"
	"regexp"
	"time"
)

// Name is the provider's name in jobs, targets and the runner's components.
const Name = "netns"

// guestLink is the machine's side of its veth pair, inside the namespace.
const guestLink = "eth0"

// ifNameMax is the kernel's limit on interface names (IFNAMSIZ 16, with the NUL).
const ifNameMax = 15

// Options configure a Provider. The zero value gives the defaults below.
type Options struct {
	// Bridge is the host bridge the machines join; default "plinth-br0". Created on first Up.
	Bridge string
	// Subnet is the machines' private IPv4 network; default 10.213.0.0/24. The bridge gets
	// its first address, machines the next free ones. Up refuses a subnet another host
	// interface already uses.
	Subnet netip.Prefix
	// NamespacePrefix starts every machine's namespace name; default "plinth-".
	NamespacePrefix string
	// LinkPrefix starts the host side of every machine's veth pair; default "pv". It bounds
	// machine ids to 15-len(LinkPrefix) characters.
	LinkPrefix string
	// LockDir holds the lock that serialises Up/Halt/Destroy of all runners on this host;
	// default /run/lock.
	LockDir string
	// IP is the iproute2 `ip` program; default: found on PATH, else /usr/sbin/ip or /sbin/ip.
	IP string
	// StopGrace is how long processes get between SIGTERM and SIGKILL on halt, destroy and a
	// graceful cancel of Exec; default 5s.
	StopGrace time.Duration
	// Sandbox, when set, runs each machine in a container of its own (see Sandbox); nil runs
	// the machine's commands in the runner's own filesystem, users and PID namespace, with
	// only the network namespace apart (for a runner that is itself in a container).
	Sandbox *Sandbox
	// Logger receives debug logs of the commands run; nil discards them.
	Logger *slog.Logger
}

// Provider is the netns machine provider.
type Provider struct {
	o       Options
	sb      *Sandbox // nil: no sandbox
	nsenter string
	gateway netip.Addr // the bridge's address: the subnet's first host
	log     *slog.Logger
	idRE    *regexp.Regexp
}

var ifNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// New checks the options and returns a provider. It does not touch the host: that happens on
// the first Up, so a runner starts even where netns cannot work (Check says why).
func New(o Options) (*Provider, error) {
	if o.Bridge == "" {
		o.Bridge = "plinth-br0"
	}
	if !o.Subnet.IsValid() {
		o.Subnet = netip.MustParsePrefix("10.213.0.0/24")
	}
	if o.NamespacePrefix == "" {
		o.NamespacePrefix = "plinth-"
	}
	if o.LinkPrefix == "" {
		o.LinkPrefix = "pv"
	}
	if o.LockDir == "" {
		o.LockDir = "/run/lock"
	}
	if o.IP == "" {
		o.IP = findIP()
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var errs []error
	if len(o.Bridge) > ifNameMax || !ifNameRE.MatchString(o.Bridge) {
		errs = append(errs, fmt.Errorf("bridge %q is not a valid interface name (letters, digits, _.-; at most %d)", o.Bridge, ifNameMax))
	}
	if !o.Subnet.Addr().Is4() || o.Subnet.Bits() < 16 || o.Subnet.Bits() > 29 {
		errs = append(errs, fmt.Errorf("subnet %s must be an IPv4 network from /16 to /29", o.Subnet))
	} else if o.Subnet.Masked() != o.Subnet {
		errs = append(errs, fmt.Errorf("subnet %s has host bits set; did you mean %s?", o.Subnet, o.Subnet.Masked()))
	}
	if n := ifNameMax - len(o.LinkPrefix); n < 8 || !ifNameRE.MatchString(o.LinkPrefix) {
		errs = append(errs, fmt.Errorf("link prefix %q must be a valid interface name prefix of at most %d characters", o.LinkPrefix, ifNameMax-8))
	}
	if !ifNameRE.MatchString(o.NamespacePrefix) {
		errs = append(errs, fmt.Errorf("namespace prefix %q: use letters, digits and _.-", o.NamespacePrefix))
	}
	var sb *Sandbox
	if o.Sandbox != nil {
		s, err := o.Sandbox.withDefaults()
		errs = append(errs, err)
		sb = &s
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("netns provider: %w", err)
	}
	return &Provider{
		o:       o,
		sb:      sb,
		nsenter: lookProgram("nsenter", "/usr/bin/nsenter"),
		gateway: o.Subnet.Addr().Next(),
		log:     o.Logger.With("provider", Name),
		idRE:    regexp.MustCompile(fmt.Sprintf(`^[a-z0-9]{1,%d}$`, ifNameMax-len(o.LinkPrefix))),
	}, nil
}

// findIP returns iproute2's ip, also when sbin is not on PATH (as for non-login shells).
func findIP() string {
	if p, err := exec.LookPath("ip"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/ip", "/sbin/ip"} {
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	return "ip"
}

// Name returns "netns".
func (p *Provider) Name() string { return Name }

// ValidID accepts lower-case letters and digits, short enough for the host veth name.
func (p *Provider) ValidID(id string) error {
	if !p.idRE.MatchString(id) {
		return fmt.Errorf("machine id %q: want 1-%d lower-case letters or digits", id, ifNameMax-len(p.o.LinkPrefix))
	}
	return nil
}

// Namespace is the network namespace of machine id.
func (p *Provider) Namespace(id string) string { return p.o.NamespacePrefix + id }

// hostLink is the host side of machine id's veth pair.
func (p *Provider) hostLink(id string) string { return p.o.LinkPrefix + id }
