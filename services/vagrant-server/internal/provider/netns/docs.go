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
	return errors.Join(errs...)
}

// Docs describes the provider and its settings.
func (p *Provider) Docs() provider.Docs {
	return provider.Docs{
		Description: "A machine is a Linux network namespace (" + p.o.NamespacePrefix + "<id>) with a veth pair into the " +
			"private bridge " + p.o.Bridge + " and its own address on " + p.o.Subnet.String() + ", a network that exists " +
			"only on the runner's host (no default route, no forwarding). up creates and starts it, halt stops its " +
			"processes and takes its links down, destroy removes it, ssh -c and exec run commands inside it.",
		Example: "vagrant up && vagrant ssh -c 'ip addr show eth0'",
		Fields: []provider.Field{
			{Name: "bridge", Synopsis: "host bridge the machines join", EnvVar: "PLINTH_VAGRANT_NETNS_BRIDGE",
				Type: "string", Default: "plinth-br0", Summary: "created on the first up; must not be another kind of interface"},
			{Name: "subnet", Synopsis: "the machines' private IPv4 network", EnvVar: "PLINTH_VAGRANT_NETNS_SUBNET",
				Type: "string", Default: "10.213.0.0/24", Summary: "the bridge takes the first address; refused when another host interface uses it"},
		},
	}
}
