package grpc

import (
	"fmt"
	"math"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	rstats "github.com/plinth-dev/plinth/libs/api/resources/stats"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// clusterStats maps the summary as upstream did (see the README), with what upstream
// hard-coded or got wrong filled from the cluster: the real quorum, volume count and gateway
// hosts and zones.
func clusterStats(s *cluster.Ceph) *rstats.ClusterStats {
	crashes := make([]*rstats.Crash, 0, len(s.Checks))
	for _, d := range crashLines(s.Checks) {
		crashes = append(crashes, &rstats.Crash{Description: d})
	}
	return &rstats.ClusterStats{
		Id:      s.FSID,
		Status:  s.Health,
		Crashes: crashes,
		Services: &rstats.Services{
			Mon: &rstats.MonService{DaemonCount: i32(len(s.Mons)), Quorum: strings.Join(s.Quorum, ","),
				CreatedAt: ts(s.MonCreated), UpdatedAt: ts(s.MonModified)},
			Mgr: &rstats.MgrService{Active: s.MgrActive, Standbys: s.MgrStandbys, UpdatedAt: ts(s.MgrChanged)},
			Mds: &rstats.MdsService{DaemonsUp: i32(s.MDSUp), HotStandbyCount: i32(s.MDSStandby)},
			Osd: &rstats.OsdService{OsdCount: i32(s.OSDs), OsdUp: i32(s.OSDsUp), OsdIn: i32(s.OSDsIn),
				OsdUpUpdatedAt: ts(s.OSDUpChanged), OsdInUpdatedAt: ts(s.OSDInChanged)},
			Rgw: &rstats.RgwService{ActiveDaemon: i32(s.RGWDaemons), HostCount: i32(s.RGWHosts), ZoneCount: i32(s.RGWZones)},
		},
		Data: &rstats.Data{
			Volumes: i32(volumeCount(s)),
			Pools:   &rstats.Pools{Pools: i32(len(s.Pools)), Pgs: &rstats.PGs{ActiveClean: i32(s.ActiveCleanPGs())}},
			Objects: &rstats.Objects{ObjectCount: i32(int(min(s.Objects, math.MaxInt32))), Size: FormatBytes(s.StoredBytes)},
			Usage:   &rstats.Usage{Used: s.Usage.Used, Available: s.Usage.Available, Total: s.Usage.Total},
		},
		Iops: &rstats.IOPS{
			ClientRead:     FormatBytes(int64(s.IO.ReadBytesPerSec)) + "/s rd",
			ClientWrite:    FormatBytes(int64(s.IO.WriteBytesPerSec)) + "/s wr",
			ClientReadOps:  fmt.Sprintf("%d ops/s rd", int64(s.IO.ReadOpsPerSec)),
			ClientWriteOps: fmt.Sprintf("%d ops/s wr", int64(s.IO.WriteOpsPerSec)),
		},
	}
}

// crashLines are the health checks as upstream's "crashes": each check's summary, muted ones
// marked (both wires).
func crashLines(checks []cluster.Check) []string {
	out := make([]string, len(checks))
	for i, c := range checks {
		out[i] = c.Message
		if c.Muted {
			out[i] += " (muted)"
		}
	}
	return out
}

// volumeCount is the RBD images (and LVM volumes) when the source counted them, else 0.
func volumeCount(s *cluster.Ceph) int {
	if s.VolumesKnown {
		return s.Volumes
	}
	return 0
}

// FormatBytes prints a size as upstream's dashboard does: two decimals and a binary unit
// ("81.97 KiB").
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	size, i := float64(n), 0
	for ; size >= 1024 && i < len(units)-1; i++ {
		size /= 1024
	}
	return fmt.Sprintf("%.2f %s", size, units[i])
}

func resourceInfo(r cluster.Resource) *rstats.ResourceInfo {
	return &rstats.ResourceInfo{Apiversion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
		Status: rstats.ResourceStatus(r.Status), Replicas: r.Replicas, Reliability: rstats.ReliabilityScore(r.Reliability)}
}

func resourceInfos(rs []cluster.Resource) []*rstats.ResourceInfo {
	out := make([]*rstats.ResourceInfo, len(rs))
	for i, r := range rs {
		out[i] = resourceInfo(r)
	}
	return out
}

func nodeInfo(n cluster.Node) *rstats.NodeInfo {
	return &rstats.NodeInfo{Name: n.Name, Status: rstats.ResourceStatus(n.Status), Roles: n.Roles,
		InternalIp: n.InternalIP, ExternalIp: n.ExternalIP, Age: ts(n.Since)}
}

func radar(r cluster.Radar) *rstats.ClusterRadar {
	return &rstats.ClusterRadar{ClusterHealth: float32(r.ClusterHealth), NodesHealth: float32(r.NodesHealth),
		CapacityAvailable: float32(r.CapacityAvailable), Stability: float32(r.Stability), Reliability: float32(r.Reliability)}
}

// upgradeModes maps koor-operator's spec strings to the API's enum.
var upgradeModes = map[string]rstats.UpgradeMode{
	"disabled": rstats.UpgradeMode_UPGRADE_MODE_DISABLED,
	"notify":   rstats.UpgradeMode_UPGRADE_MODE_NOTIFY,
	"upgrade":  rstats.UpgradeMode_UPGRADE_MODE_UPGRADE,
}

func koorCluster(k *cluster.KoorCluster) *rstats.KoorCluster {
	out := &rstats.KoorCluster{
		Name: k.Name, Namespace: k.Namespace,
		Spec: &rstats.KoorClusterSpec{
			UseAllDevices: boolValue(k.UseAllDevices), MonitoringEnabled: boolValue(k.MonitoringEnabled),
			DashboardEnabled: boolValue(k.DashboardEnabled), ToolboxEnabled: boolValue(k.ToolboxEnabled),
			UpgradeOptions: &rstats.UpgradeOptions{Mode: upgradeModes[k.UpgradeMode], Endpoint: k.UpgradeEndpoint, Schedule: k.UpgradeSchedule},
			KsdReleaseName: k.KsdReleaseName, KsdClusterReleaseName: k.KsdClusterReleaseName,
		},
		Status: &rstats.KoorClusterStatus{
			TotalResources:        &rstats.ClusterResources{Nodes: k.TotalNodes, Storage: k.TotalStorage, Cpu: k.TotalCPU, Memory: k.TotalMemory},
			MeetsMinimumResources: k.MeetsMinimumResources,
			CurrentVersions: &rstats.ProductVersions{Kube: k.Current.Kube, KoorOperator: k.Current.KoorOperator,
				Ksd: k.Current.Ksd, Ceph: k.Current.Ceph},
		},
	}
	if l := k.Latest; l != nil {
		out.Status.LatestVersions = &rstats.DetailedProductVersions{KoorOperator: detailed(l.KoorOperator), Ksd: detailed(l.Ksd), Ceph: detailed(l.Ceph)}
	}
	return out
}

func detailed(v *cluster.DetailedVersion) *rstats.DetailedVersion {
	if v == nil {
		return nil
	}
	return &rstats.DetailedVersion{Version: v.Version, ImageUri: v.ImageURI, ImageHash: v.ImageHash,
		HelmRepository: v.HelmRepository, HelmChart: v.HelmChart}
}

func boolValue(b *bool) *wrapperspb.BoolValue {
	if b == nil {
		return nil
	}
	return wrapperspb.Bool(*b)
}

// ts is t as a timestamp; unknown (zero) times are left out rather than sent as year 1.
func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// i32 is n clamped to the wire's int32.
func i32(n int) int32 { return int32(max(min(n, math.MaxInt32), math.MinInt32)) }
