package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
)

// Check reports whether netns machines can work on this host: root, iproute2, and a kernel
// that lets ip list network namespaces.
func (p *Provider) Check(ctx context.Context) error {
	var errs []error
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("netns needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create namespaces and links"))
	}
	if _, err := exec.LookPath(p.o.IP); err != nil {
		errs = append(errs, fmt.Errorf("iproute2's ip is not installed (apt-get install iproute2): %w", err))
	} else if _, err := p.namespaces(ctx); err != nil {
		errs = append(errs, err)
	}
	if p.sb != nil {
		for _, prog := range []struct{ path, install string }{{p.sb.Runc, "runc"}, {p.sb.Init, "tini"}, {p.nsenter, "util-linux"}} {
			if _, err := exec.LookPath(prog.path); err != nil {
				errs = append(errs, fmt.Errorf("the machines' sandbox needs %s (apt-get install %s): %w", prog.path, prog.install, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Docs describes the provider and its settings.
func (p *Provider) Docs() provider.Docs {
	return provider.Docs{
		Description: "A machine is a Linux network namespace (" + p.o.NamespacePrefix + "<id>) with a veth pair into the " +
			"private bridge " + p.o.Bridge + " and its own address on " + p.o.Subnet.String() + ", a network that exists " +
			"only on the runner's host (no default route, no forwarding). up creates and starts it, halt stops its " +
			"processes and takes its links down, destroy removes it, ssh -c and exec run commands inside it. " + p.sandboxDoc(),
		Example: "vagrant up && vagrant ssh -c 'ip addr show eth0'",
		Fields: []provider.Field{
			{Name: "bridge", Synopsis: "host bridge the machines join", EnvVar: "PLINTH_VAGRANT_NETNS_BRIDGE",
				Type: "string", Default: "plinth-br0", Summary: "created on the first up; must not be another kind of interface"},
			{Name: "subnet", Synopsis: "the machines' private IPv4 network", EnvVar: "PLINTH_VAGRANT_NETNS_SUBNET",
				Type: "string", Default: "10.213.0.0/24", Summary: "the bridge takes the first address; refused when another host interface uses it"},
			{Name: "sandbox", Synopsis: "runc (each machine a container) or off", EnvVar: "PLINTH_VAGRANT_NETNS_SANDBOX",
				Type: "string", Default: "runc", Summary: "off only where the runner is itself a container"},
			{Name: "share", Synopsis: "host paths the machines see read-only", EnvVar: "PLINTH_VAGRANT_NETNS_SHARE",
				Type: "list", Summary: "at the same path in every machine"},
			{Name: "memory", Synopsis: "each machine's memory limit", EnvVar: "PLINTH_VAGRANT_NETNS_MEMORY", Type: "size", Default: "2G"},
			{Name: "cpus", Synopsis: "each machine's CPU limit", EnvVar: "PLINTH_VAGRANT_NETNS_CPUS", Type: "number", Default: "1"},
			{Name: "pids", Synopsis: "each machine's limit of processes and threads", EnvVar: "PLINTH_VAGRANT_NETNS_PIDS", Type: "int", Default: "2048"},
		},
	}
}

// sandboxDoc says what a job in a machine may reach.
func (p *Provider) sandboxDoc() string {
	if p.sb == nil {
		return "The sandbox is off: a command runs as root in the runner's own filesystem and processes."
	}
	return fmt.Sprintf("Each machine is a runc container: root inside is host uid %d, with a minimal capability set, its own "+
		"root filesystem (the host's /usr and /etc read-only), processes and hostname, and limits of %d MiB, %g CPUs and %d processes.",
		p.sb.HostID, p.sb.Memory>>20, p.sb.CPUs, p.sb.Pids)
}
