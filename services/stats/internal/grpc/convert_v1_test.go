package grpc

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	cephv1 "github.com/plinth-dev/plinth/libs/api/api/resources/ceph/v1"
	k8sv1 "github.com/plinth-dev/plinth/libs/api/api/resources/k8s/v1"
	rstats "github.com/plinth-dev/plinth/libs/api/resources/stats"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

func TestClusterStatsV1Mapping(t *testing.T) {
	at := time.Date(2026, 11, 24, 2, 17, 2, 0, time.UTC)
	s := &cluster.Ceph{FSID: "f", Health: "HEALTH_WARN",
		Checks: []cluster.Check{{Message: "noout flag(s) set"}, {Message: "1 daemons have recently crashed", Muted: true}},
		Mons:   []string{"a", "b", "c"}, Quorum: []string{"a", "c"}, MonCreated: at, MgrActive: "x", MgrStandbys: []string{"y"},
		Filesystems: 1, MDSUp: 2, MDSStandby: 1, OSDs: 3, OSDsUp: 3, OSDsIn: 2, OSDInChanged: at,
		Pools: []cluster.Pool{{ActiveClean: 8}, {ActiveClean: 32}}, Objects: 236, StoredBytes: 20977048,
		Usage: cluster.Usage{Used: 1, Available: 2, Total: 3}, IO: cluster.IO{ReadBytesPerSec: 83937, WriteBytesPerSec: 1746643.7, ReadOpsPerSec: 108, WriteOpsPerSec: 60.9},
		Volumes: 4, VolumesKnown: true, RGWDaemons: 2, RGWHosts: 2, RGWZones: 1}
	want := &cephv1.ClusterStats{Id: "f", Status: cephv1.ClusterHealth_CLUSTER_HEALTH_WARN,
		Crashes: []*cephv1.Crash{{Description: "noout flag(s) set"}, {Description: "1 daemons have recently crashed (muted)"}},
		Services: &cephv1.Services{
			Mon: &cephv1.MonService{DaemonCount: 3, Quorum: []string{"a", "c"}, CreatedSince: ts(at)},
			Mgr: &cephv1.MgrService{Active: "x", Standbys: []string{"y"}},
			Mds: &cephv1.MdsService{DaemonsUp: 2, HotStandbyCount: 1},
			Osd: &cephv1.OsdService{OsdCount: 3, OsdUp: 3, OsdIn: 2, OsdInUpdatedSince: ts(at)},
			Rgw: &cephv1.RgwService{ActiveDaemon: 2, HostCount: 2, ZoneCount: 1},
		},
		Data: &cephv1.Data{Volumes: 4, Pools: &cephv1.Pools{Pools: 2, Pgs: &cephv1.PGs{ActiveClean: 40}},
			Objects: &cephv1.Objects{ObjectCount: 236, Size: 20977048}, Usage: &cephv1.Usage{Used: 1, Available: 2, Total: 3}},
		Iops: &cephv1.IOPS{ClientRead: 83937, ClientWrite: 1746643, ClientReadOps: 108, ClientWriteOps: 60},
	}
	if got := clusterStatsV1(s); !proto.Equal(got, want) {
		t.Fatalf("got\n%v\nwant\n%v", got, want)
	}
	for health, want := range map[string]cephv1.ClusterHealth{"HEALTH_OK": cephv1.ClusterHealth_CLUSTER_HEALTH_OK,
		"HEALTH_ERR": cephv1.ClusterHealth_CLUSTER_HEALTH_ERR, "HEALTH_UNKNOWN": cephv1.ClusterHealth_CLUSTER_HEALTH_ERR,
		"": cephv1.ClusterHealth_CLUSTER_HEALTH_UNSPECIFIED} {
		if got := clusterHealthV1(health); got != want {
			t.Errorf("%q → %v, want %v", health, got, want)
		}
	}
}

// Each domain status and score has the v1 value of the same name as its seed value.
func TestResourceEnumsV1HaveTheSeedsNames(t *testing.T) {
	for st := cluster.StatusUnknown; st <= cluster.StatusNotReady; st++ {
		seed, v1 := rstats.ResourceStatus(st).String(), resourceStatusV1(st).String()
		if "RESOURCE_STATUS_"+seed[len("RESOURCE_"):] != v1 {
			t.Errorf("status %d: seed %s, v1 %s", st, seed, v1)
		}
	}
	for r := cluster.ReliabilityUnknown; r <= cluster.ReliabilityOK; r++ {
		seed, v1 := rstats.ReliabilityScore(r).String(), reliabilityV1(r).String()
		if "RELIABILITY_SCORE_"+seed[len("RELIABILITY_"):] != v1 {
			t.Errorf("reliability %d: seed %s, v1 %s", r, seed, v1)
		}
	}
	n := nodeInfoV1(cluster.Node{Name: "n", Status: cluster.StatusReady, InternalIP: "10.0.0.1"})
	if n.GetStatus() != k8sv1.ResourceStatus_RESOURCE_STATUS_READY || n.InternalIp == nil || n.ExternalIp != nil || n.Age != nil {
		t.Errorf("node %v: unknown address and age must be absent", n)
	}
}

func TestRecommendationsV1(t *testing.T) {
	got := recommendationsV1([]cluster.Recommendation{{Title: "t", Description: "d", Level: cluster.LevelCritical, Topic: cluster.TopicPool,
		Current: "1", Expected: "3"}, {Title: "u", Level: cluster.LevelLow, Topic: cluster.TopicCluster}})
	want := []*cephv1.ClusterRecommendation{{Title: "t", Description: "d", Level: cephv1.RecommendationLevel_RECOMMENDATION_LEVEL_CRITICAL,
		Type: cephv1.RecommendationType_RECOMMENDATION_TYPE_POOL, ExtraData: &cephv1.ClusterRecommendation_RecommendedValue{
			RecommendedValue: &cephv1.RecommendedValue{Current: "1", Expected: "3"}}},
		{Title: "u", Level: cephv1.RecommendationLevel_RECOMMENDATION_LEVEL_LOW, Type: cephv1.RecommendationType_RECOMMENDATION_TYPE_CLUSTER}}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("%d: got %v, want %v", i, got[i], want[i])
		}
	}
	if cephv1.RecommendationType(cluster.TopicMon) != cephv1.RecommendationType_RECOMMENDATION_TYPE_MON {
		t.Error("TopicMon is not RECOMMENDATION_TYPE_MON")
	}
}
