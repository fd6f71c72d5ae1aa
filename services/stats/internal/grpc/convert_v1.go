package grpc

import (
	"math"

	cephv1 "github.com/plinth-dev/plinth/libs/api/api/resources/ceph/v1"
	k8sv1 "github.com/plinth-dev/plinth/libs/api/api/resources/k8s/v1"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// The released Koor wire (api.resources.ceph.v1, api.resources.k8s.v1) carries the same
// figures as the seed's resources.stats, renumbered: sizes and rates as numbers instead of
// display strings, the quorum as a list, the health as an enum, and enums that start with an
// UNSPECIFIED zero. Only the mapping lives here; every figure comes from the same view.

// clusterHealthV1 maps Ceph's status as Koor's server does (any other status is ERR), except
// that no status at all (no source reported one) is UNSPECIFIED, which the UI shows as offline.
func clusterHealthV1(health string) cephv1.ClusterHealth {
	switch health {
	case "":
		return cephv1.ClusterHealth_CLUSTER_HEALTH_UNSPECIFIED
	case cluster.HealthOK:
		return cephv1.ClusterHealth_CLUSTER_HEALTH_OK
	case cluster.HealthWarn:
		return cephv1.ClusterHealth_CLUSTER_HEALTH_WARN
	}
	return cephv1.ClusterHealth_CLUSTER_HEALTH_ERR
}

// clusterStatsV1 is clusterStats on the v1 wire.
func clusterStatsV1(s *cluster.Ceph) *cephv1.ClusterStats {
	crashes := make([]*cephv1.Crash, 0, len(s.Checks))
	for _, d := range crashLines(s.Checks) {
		crashes = append(crashes, &cephv1.Crash{Description: d})
	}
	return &cephv1.ClusterStats{
		Id:      s.FSID,
		Status:  clusterHealthV1(s.Health),
		Crashes: crashes,
		Services: &cephv1.Services{
			Mon: &cephv1.MonService{DaemonCount: i32(len(s.Mons)), Quorum: s.Quorum,
				CreatedSince: ts(s.MonCreated), UpdatedSince: ts(s.MonModified)},
			Mgr: &cephv1.MgrService{Active: s.MgrActive, Standbys: s.MgrStandbys, UpdatedSince: ts(s.MgrChanged)},
			Mds: &cephv1.MdsService{DaemonsUp: i32(s.MDSUp), HotStandbyCount: i32(s.MDSStandby)},
			Osd: &cephv1.OsdService{OsdCount: i32(s.OSDs), OsdUp: i32(s.OSDsUp), OsdIn: i32(s.OSDsIn),
				OsdUpUpdatedSince: ts(s.OSDUpChanged), OsdInUpdatedSince: ts(s.OSDInChanged)},
			Rgw: &cephv1.RgwService{ActiveDaemon: i32(s.RGWDaemons), HostCount: i32(s.RGWHosts), ZoneCount: i32(s.RGWZones)},
		},
		Data: &cephv1.Data{
			Volumes: i32(volumeCount(s)),
			Pools:   &cephv1.Pools{Pools: i32(len(s.Pools)), Pgs: &cephv1.PGs{ActiveClean: i32(s.ActiveCleanPGs())}},
			Objects: &cephv1.Objects{ObjectCount: i32(int(min(s.Objects, math.MaxInt32))), Size: s.StoredBytes},
			Usage:   &cephv1.Usage{Used: s.Usage.Used, Available: s.Usage.Available, Total: s.Usage.Total},
		},
		// Whole bytes and operations per second, truncated as the seed's strings are.
		Iops: &cephv1.IOPS{
			ClientRead: int64(s.IO.ReadBytesPerSec), ClientWrite: int64(s.IO.WriteBytesPerSec),
			ClientReadOps: int64(s.IO.ReadOpsPerSec), ClientWriteOps: int64(s.IO.WriteOpsPerSec),
		},
	}
}

// resourceStatusV1 shifts the domain's status (numbered as the seed's enum, UNKNOWN = 0) past
// the v1 enum's UNSPECIFIED.
func resourceStatusV1(s cluster.Status) k8sv1.ResourceStatus {
	return k8sv1.ResourceStatus(s + 1)
}

// reliabilityV1 shifts the domain's score past the v1 enum's UNSPECIFIED likewise.
func reliabilityV1(r cluster.Reliability) k8sv1.ReliabilityScore {
	return k8sv1.ReliabilityScore(r + 1)
}

func resourceInfosV1(rs []cluster.Resource) []*k8sv1.ResourceInfo {
	out := make([]*k8sv1.ResourceInfo, len(rs))
	for i, r := range rs {
		out[i] = &k8sv1.ResourceInfo{Apiversion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			Status: resourceStatusV1(r.Status), Replicas: r.Replicas, Reliability: reliabilityV1(r.Reliability)}
	}
	return out
}

// nodeInfoV1 is nodeInfo on the v1 wire, where the addresses are optional: an unknown one is
// left out rather than sent empty.
func nodeInfoV1(n cluster.Node) *k8sv1.NodeInfo {
	return &k8sv1.NodeInfo{Name: n.Name, Status: resourceStatusV1(n.Status), Roles: n.Roles,
		InternalIp: optional(n.InternalIP), ExternalIp: optional(n.ExternalIP), Age: ts(n.Since)}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func radarV1(r cluster.Radar) *cephv1.ClusterRadar {
	return &cephv1.ClusterRadar{ClusterHealth: float32(r.ClusterHealth), NodesHealth: float32(r.NodesHealth),
		CapacityAvailable: float32(r.CapacityAvailable), Stability: float32(r.Stability), Reliability: float32(r.Reliability)}
}

func recommendationsV1(rs []cluster.Recommendation) []*cephv1.ClusterRecommendation {
	out := make([]*cephv1.ClusterRecommendation, len(rs))
	for i, r := range rs {
		out[i] = &cephv1.ClusterRecommendation{Title: r.Title, Description: r.Description,
			Level: cephv1.RecommendationLevel(r.Level), Type: cephv1.RecommendationType(r.Topic)}
		if r.Current != "" || r.Expected != "" {
			out[i].ExtraData = &cephv1.ClusterRecommendation_RecommendedValue{
				RecommendedValue: &cephv1.RecommendedValue{Current: r.Current, Expected: r.Expected}}
		}
	}
	return out
}
