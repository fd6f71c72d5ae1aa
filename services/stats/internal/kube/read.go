package kube

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// ReadKube builds a report from the caches (a cluster.Reader); it fails until the first lists
// arrived. A custom resource that does not decode is logged and left out.
func (s *Source) ReadKube(ctx context.Context) (*cluster.Kube, error) {
	for _, synced := range s.synced {
		if !synced() {
			return nil, errNotSynced
		}
	}
	s.discover()
	k := &cluster.Kube{}
	deployments, err := s.deployments.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("kubernetes: deployments: %w", err)
	}
	sort.Slice(deployments, func(i, j int) bool { return deployments[i].Name < deployments[j].Name })
	for _, d := range deployments {
		k.Deployments = append(k.Deployments, Deployment(d))
	}
	if k.Nodes, err = s.storageNodes(); err != nil {
		return nil, err
	}
	for _, kind := range customKinds[:4] {
		objs, _ := s.customObjects(kind)
		for _, data := range objs {
			d, err := Decode(kind, data)
			if err != nil {
				s.log.WarnContext(ctx, "skipping a custom resource that does not decode", "kind", kind, "err", err)
				continue
			}
			k.Resources = append(k.Resources, d.Resource)
			k.Redundancy.Pools = append(k.Redundancy.Pools, d.Pools...)
			switch kind {
			case KindCephCluster:
				k.Redundancy.Mons = max(k.Redundancy.Mons, d.Mons)
				if k.RookCeph == nil {
					k.RookCeph = d.Ceph
				}
			case KindCephFilesystem:
				k.Redundancy.Filesystems++
				k.Redundancy.MDS += d.MDS
			case KindCephObjectStore:
				k.Redundancy.ObjectStores++
				k.Redundancy.RGW += d.Gateways
			}
		}
	}
	if k.RookCeph != nil {
		rook := *k.RookCeph
		rook.Pools = k.Redundancy.Pools
		rook.Mons = rookMons(deployments)
		k.RookCeph = &rook
	}
	objs, _ := s.customObjects(kindKoorCluster)
	for _, data := range objs {
		kc, err := DecodeKoorCluster(data)
		if err != nil {
			s.log.WarnContext(ctx, "skipping a KoorCluster that does not decode", "err", err)
			continue
		}
		k.KoorCluster = kc // the first by name, as upstream took the first listed
		break
	}
	return k, nil
}

// storageNodes are the nodes the Ceph pods are scheduled on, by name.
func (s *Source) storageNodes() ([]cluster.Node, error) {
	pods, err := s.pods.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("kubernetes: pods: %w", err)
	}
	names := map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			names[p.Spec.NodeName] = true
		}
	}
	var nodes []cluster.Node
	for name := range names {
		n, err := s.nodes.Get(name)
		if err != nil {
			continue // the node is gone; its pods will follow
		}
		nodes = append(nodes, Node(n))
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes, nil
}
