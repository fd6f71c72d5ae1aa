package cluster

// Kube is what the Kubernetes source read from the storage cluster's namespace.
type Kube struct {
	// Resources are the Rook custom resources: CephClusters, CephBlockPools,
	// CephFilesystems and CephObjectStores, in that order.
	Resources []Resource
	// Deployments are every Deployment in the namespace.
	Deployments []Resource
	// Nodes are the nodes running the Ceph daemons' pods.
	Nodes []Node
	// KoorCluster is the namespace's KoorCluster, nil when there is none.
	KoorCluster *KoorCluster
	// RookCeph is what Rook recorded of Ceph in the first CephCluster's status (health,
	// capacity, checks) with its pools from the Rook resources; nil before Rook checked.
	RookCeph *Ceph
	// Redundancy is what the Rook resources ask for.
	Redundancy Redundancy
}

// KoorCluster is a storage.koor.tech/v1alpha1 KoorCluster.
type KoorCluster struct {
	Name, Namespace string

	// The spec's switches; nil when the object leaves them unset.
	UseAllDevices, MonitoringEnabled, DashboardEnabled, ToolboxEnabled *bool
	// UpgradeMode is disabled, notify or upgrade; "" when unset.
	UpgradeMode, UpgradeEndpoint, UpgradeSchedule string
	KsdReleaseName, KsdClusterReleaseName         string

	// Totals are quantities as Kubernetes prints them (canonical form).
	TotalNodes, TotalStorage, TotalCPU, TotalMemory string
	MeetsMinimumResources                           bool
	Current                                         ProductVersions
	// Latest is nil until the operator looked the versions up.
	Latest *LatestVersions
}

// ProductVersions are the versions running.
type ProductVersions struct {
	Kube, KoorOperator, Ksd, Ceph string
}

// LatestVersions are the newest versions available; each nil when unknown.
type LatestVersions struct {
	KoorOperator, Ksd, Ceph *DetailedVersion
}

// DetailedVersion is a version with where to get it.
type DetailedVersion struct {
	Version, ImageURI, ImageHash, HelmRepository, HelmChart string
}

// Redundancy is what reliability is computed from: how many copies of each pool and how many
// of each daemon there are (or are asked for).
type Redundancy struct {
	Pools []Pool
	Mons  int
	// Filesystems and MDS: the file systems and their metadata server daemons.
	Filesystems, MDS int
	// ObjectStores and RGW: the object stores and their gateways.
	ObjectStores, RGW int
}

// Redundancy is what a Ceph report says about copies and daemons.
func (c *Ceph) Redundancy() Redundancy {
	return Redundancy{Pools: c.Pools, Mons: len(c.Mons), Filesystems: c.Filesystems, MDS: c.MDSUp + c.MDSStandby,
		ObjectStores: min(c.RGWDaemons, 1), RGW: c.RGWDaemons}
}

// Inventory is the suite's own node inventory: lvmd-agent's storage nodes and kaas's machines.
type Inventory struct {
	Nodes []Node
	// Capacity sums the nodes' LVM volume groups (free space after each class's spare).
	Capacity Usage
	// Volumes counts their logical volumes.
	Volumes int
	// Problems are stale nodes and failed machines, as health checks.
	Problems []Check
}
