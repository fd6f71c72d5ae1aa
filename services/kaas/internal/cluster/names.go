package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
)

// maxMachineName keeps machine names single DNS labels: they become hostnames and
// Kubernetes node names.
const maxMachineName = 63

// MachineName names the machine with ordinal n of pool in cluster: "<cluster>-<pool>-<n>".
// Names too long for a DNS label are shortened with a hash of the full name, so they stay
// unique within the cluster.
func MachineName(cluster, pool string, n int) string {
	suffix := "-" + strconv.Itoa(n)
	name := cluster + "-" + pool + suffix
	if len(name) <= maxMachineName {
		return name
	}
	sum := sha256.Sum256([]byte(cluster + "/" + pool))
	tag := "-" + hex.EncodeToString(sum[:])[:8]
	keep := maxMachineName - len(tag) - len(suffix)
	head := name[:keep]
	for len(head) > 0 && head[len(head)-1] == '-' {
		head = head[:len(head)-1]
	}
	return head + tag + suffix
}

// ScaleDownOrder returns machines in the order a scale-down releases them: failed machines
// first (they serve nobody), then the newest (highest ordinal), so the longest-running
// machines stay.
func ScaleDownOrder(machines []Machine) []Machine {
	out := slices.Clone(machines)
	slices.SortStableFunc(out, func(a, b Machine) int {
		af, bf := a.State == MachineFailed, b.State == MachineFailed
		if af != bf {
			if af {
				return -1
			}
			return 1
		}
		return b.Ordinal - a.Ordinal
	})
	return out
}
