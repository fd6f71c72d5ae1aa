package vagrant

import (
	"errors"
	"net/netip"
	"strings"
)

// parseAddress finds the machine's IPv4 address in `ip -4 -o addr show dev eth0` output
// ("2: eth0    inet 10.213.0.5/24 brd 10.213.0.255 scope global eth0 ..."): the first global
// inet address. The output comes from a machine; it is read as untrusted text.
func parseAddress(out string) (string, error) {
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		for i := 0; i+1 < len(fields); i++ {
			if fields[i] != "inet" {
				continue
			}
			p, err := netip.ParsePrefix(fields[i+1])
			if err != nil || !p.Addr().Is4() || p.Addr().IsLoopback() || p.Addr().IsUnspecified() {
				continue
			}
			return p.Addr().String(), nil
		}
	}
	return "", errors.New("the machine reported no IPv4 address on eth0")
}
