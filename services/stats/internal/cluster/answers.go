package cluster

import (
	"errors"
	"fmt"
)

// ErrNoKoorCluster says there is no KoorCluster; the text is upstream's NotFound message.
var ErrNoKoorCluster = errors.New("koor cluster Not found")

// errKubeNotConfigured explains ErrNoKoorCluster when there is no Kubernetes source at all.
var errKubeNotConfigured = errors.New("no Kubernetes source is configured")

// kubeReport is the Kubernetes report, or why there is none: a *NoDataError while the source has
// not answered (a retry will help), nil with no error when it is not configured.
func (c *Collector) kubeReport() (*Kube, error) {
	if c.cfg.Kube == nil {
		return nil, nil
	}
	v, err := c.View()
	if err != nil {
		return nil, err
	}
	if v.Kube == nil {
		c.mu.Lock()
		state := c.kube.state
		c.mu.Unlock()
		return nil, &NoDataError{Sources: []SourceState{state}}
	}
	return v.Kube, nil
}

// Resources are the Rook resources and the Deployments of the storage cluster's namespace;
// none without a Kubernetes source.
func (c *Collector) Resources() (resources, deployments []Resource, err error) {
	k, err := c.kubeReport()
	if k == nil {
		return nil, nil, err
	}
	return k.Resources, k.Deployments, nil
}

// KoorCluster is the namespace's KoorCluster, or ErrNoKoorCluster.
func (c *Collector) KoorCluster() (*KoorCluster, error) {
	k, err := c.kubeReport()
	switch {
	case err != nil:
		return nil, err
	case k == nil:
		return nil, fmt.Errorf("%w (%w)", ErrNoKoorCluster, errKubeNotConfigured)
	case k.KoorCluster == nil:
		return nil, ErrNoKoorCluster
	}
	return k.KoorCluster, nil
}
