package netns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
)

// errNoDevice is what ip reports for an interface that does not exist.
var errNoDevice = errors.New("device does not exist")

// link is one interface as `ip -j -d addr show` describes it (the fields used here).
type link struct {
	Name     string   `json:"ifname"`
	Flags    []string `json:"flags"`
	Master   string   `json:"master"`
	LinkInfo struct {
		Kind string `json:"info_kind"`
	} `json:"linkinfo"`
	Addrs []struct {
		Family    string `json:"family"`
		Local     string `json:"local"`
		PrefixLen int    `json:"prefixlen"`
	} `json:"addr_info"`
}

// up reports whether the interface is administratively up.
func (l link) up() bool { return slices.Contains(l.Flags, "UP") }

// ipv4 returns the interface's IPv4 addresses with their prefix lengths.
func (l link) ipv4() []netip.Prefix {
	var out []netip.Prefix
	for _, a := range l.Addrs {
		if a.Family != "inet" {
			continue
		}
		if addr, err := netip.ParseAddr(a.Local); err == nil {
			out = append(out, netip.PrefixFrom(addr, a.PrefixLen))
		}
	}
	return out
}

// ip runs the ip program and returns its standard output; a failure carries ip's own message.
func (p *Provider) ip(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, p.o.IP, args...)
	cmd.Env = []string{"LC_ALL=C"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	p.log.DebugContext(ctx, "ip", "args", args)
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "does not exist") || strings.Contains(msg, "Cannot find device") {
			return nil, fmt.Errorf("ip %s: %s: %w", strings.Join(args, " "), msg, errNoDevice)
		}
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("ip %s: %s", strings.Join(args, " "), msg)
	}
	return stdout.Bytes(), nil
}

// links lists interfaces with addresses and link details: on the host when ns is "", else
// in namespace ns; dev, when set, names the one interface wanted.
func (p *Provider) links(ctx context.Context, ns, dev string) ([]link, error) {
	args := []string{"-j", "-d"}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	args = append(args, "addr", "show")
	if dev != "" {
		args = append(args, "dev", dev)
	}
	out, err := p.ip(ctx, args...)
	if err != nil {
		return nil, err
	}
	var ls []link
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(out, &ls); err != nil {
		return nil, fmt.Errorf("ip %s: unexpected output: %w", strings.Join(args, " "), err)
	}
	return ls, nil
}

// findLink returns interface dev (in ns, or on the host when ns is ""), or ok=false when it
// does not exist.
func (p *Provider) findLink(ctx context.Context, ns, dev string) (link, bool, error) {
	ls, err := p.links(ctx, ns, dev)
	if errors.Is(err, errNoDevice) {
		return link{}, false, nil
	}
	if err != nil || len(ls) == 0 {
		return link{}, false, err
	}
	return ls[0], true, nil
}

// namespaces lists the names of this provider's namespaces (those with its prefix).
func (p *Provider) namespaces(ctx context.Context) ([]string, error) {
	out, err := p.ip(ctx, "-j", "netns", "list")
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, nil // no namespaces at all: ip prints nothing
	}
	var list []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("ip -j netns list: unexpected output: %w", err)
	}
	var names []string
	for _, n := range list {
		if strings.HasPrefix(n.Name, p.o.NamespacePrefix) {
			names = append(names, n.Name)
		}
	}
	return names, nil
}

// namespaceExists reports whether the namespace ns exists.
func (p *Provider) namespaceExists(ctx context.Context, ns string) (bool, error) {
	names, err := p.namespaces(ctx)
	return slices.Contains(names, ns), err
}
