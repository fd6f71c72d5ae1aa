package cluster

// The per-resource reliability scores of GetClusterResources, by the same rules as the radar's
// reliability: three copies, two needed; three monitors; two of every other daemon.

// PoolReliability: OK with at least 3 copies of which at most one may be lost to keep serving
// (min_size ≥ 2, or not known), DEGRADED with 2 copies (or 3+ but serving from one), NONE with
// a single copy, UNKNOWN when the size is not known.
func PoolReliability(p Pool) Reliability {
	switch {
	case p.Size <= 0:
		return ReliabilityUnknown
	case p.Size == 1:
		return ReliabilityNone
	case p.Redundant():
		return ReliabilityOK
	}
	return ReliabilityDegraded
}

// MonReliability: OK with 3 or more monitors (one may fail and a majority remains), DEGRADED
// with 2, NONE with 1, UNKNOWN with none asked for.
func MonReliability(count int) Reliability {
	switch {
	case count <= 0:
		return ReliabilityUnknown
	case count == 1:
		return ReliabilityNone
	case count == 2:
		return ReliabilityDegraded
	}
	return ReliabilityOK
}

// DaemonReliability is for MDS and gateway daemons: OK with 2 or more, NONE with 1, UNKNOWN
// with none.
func DaemonReliability(count int) Reliability {
	switch {
	case count <= 0:
		return ReliabilityUnknown
	case count == 1:
		return ReliabilityNone
	}
	return ReliabilityOK
}

// DeploymentReliability: OK when at least 2 replicas are wanted and ready, DEGRADED when 2 or
// more are wanted but only one is ready, NONE when one replica is all there is (or none is
// ready), UNKNOWN when scaled to zero.
func DeploymentReliability(wanted, ready int32) Reliability {
	switch {
	case wanted <= 0:
		return ReliabilityUnknown
	case wanted >= 2 && ready >= 2:
		return ReliabilityOK
	case wanted >= 2 && ready == 1:
		return ReliabilityDegraded
	}
	return ReliabilityNone
}
