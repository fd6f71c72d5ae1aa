package vagrant

import (
	"context"
	"fmt"
	"net"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/services/kaas/internal/kube"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider"
)

// ready waits (at most wait) until machine m serves what its bootstrap started: a
// control-plane machine's API server ready on b.Version; every machine's Node Ready with
// kubelet version b.Version.
func (p *Provider) ready(ctx context.Context, m provider.Machine, b provider.Bootstrap, st progress, wait time.Duration) error {
	api := b.Endpoint
	if isCP(m) {
		api = net.JoinHostPort(st.Address, "6443")
	}
	c, err := kube.Connect(b.PKI, m.Cluster, api, 5*time.Second)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var last error
	for {
		if last = readyOnce(ctx, c, m, b, isCP(m)); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func readyOnce(ctx context.Context, c *kube.Client, m provider.Machine, b provider.Bootstrap, cp bool) error {
	if cp {
		if err := c.Ready(ctx); err != nil {
			return fmt.Errorf("API server not ready: %w", err)
		}
		v, err := c.Version(ctx)
		if err != nil {
			return err
		}
		if v != b.Version {
			return fmt.Errorf("the API server reports %s", v)
		}
	}
	n, err := c.CoreV1().Nodes().Get(ctx, m.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("node %s: %w", m.Name, err)
	}
	if r := kube.Readiness(n); r != "Ready" {
		return fmt.Errorf("node %s is %s", m.Name, r)
	}
	if v := n.Status.NodeInfo.KubeletVersion; v != b.Version {
		return fmt.Errorf("node %s reports %s", m.Name, v)
	}
	return nil
}
