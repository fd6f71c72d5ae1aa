package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	cephv1 "github.com/plinth-dev/plinth/libs/api/api/resources/ceph/v1"
	koorstats "github.com/plinth-dev/plinth/libs/api/api/services/stats/v1"
	rstats "github.com/plinth-dev/plinth/libs/api/resources/stats"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/services/stats/internal/cephtest"
	statsgrpc "github.com/plinth-dev/plinth/services/stats/internal/grpc"
)

// koorV1Calls are the RPCs of api.services.stats.v1.StatsService by full method, for the token
// checks every RPC must pass.
func koorV1Calls(c koorstats.StatsServiceClient) map[string]func(ctx context.Context) error {
	const svc = "/api.services.stats.v1.StatsService/"
	return map[string]func(ctx context.Context) error{
		svc + "GetClusterStats": func(ctx context.Context) error {
			_, err := c.GetClusterStats(ctx, &koorstats.GetClusterStatsRequest{})
			return err
		},
		svc + "GetClusterResources": func(ctx context.Context) error {
			_, err := c.GetClusterResources(ctx, &koorstats.GetClusterResourcesRequest{})
			return err
		},
		svc + "GetClusterNodes": func(ctx context.Context) error {
			_, err := c.GetClusterNodes(ctx, &koorstats.GetClusterNodesRequest{})
			return err
		},
		svc + "GetClusterRadar": func(ctx context.Context) error {
			_, err := c.GetClusterRadar(ctx, &koorstats.GetClusterRadarRequest{})
			return err
		},
		svc + "ListClusterRecommendations": func(ctx context.Context) error {
			_, err := c.ListClusterRecommendations(ctx, &koorstats.ListClusterRecommendationsRequest{})
			return err
		},
	}
}

// TestKoorV1WireOverARealCephCluster runs stats against a real single-node Ceph (dashboard and
// prometheus module, memstore OSD) and reads it through both of Koor's wires: every figure of
// the released UIs' api.services.stats.v1 answers equals the seed's stats.StatsService answer
// of the same view (and `ceph status`), before and after the cluster changes; the
// recommendations follow the live pools (size, min_size) and monitors.
func TestKoorV1WireOverARealCephCluster(t *testing.T) {
	t.Parallel()
	c := cephtest.Start(t, cephtest.Options{Dashboard: true})
	e := newEnv(t)
	e.secrets = append(e.secrets, c.DashboardPassword)
	in := e.start(t, e.config(t, "PLINTH_STATS_CEPH_URL="+c.DashboardURL, "PLINTH_STATS_CEPH_USER="+c.DashboardUser,
		"PLINTH_STATS_CEPH_PASSWORD_FILE="+c.Local().DashboardPasswordFile(), "PLINTH_STATS_INVENTORY=false"))
	seed, v1 := in.client, koorstats.NewStatsServiceClient(in.conn)

	// Data, so that the figures are not all zero: a pool with 2 MiB of objects.
	c.Ceph(t, "osd", "pool", "create", "data", "8")
	c.Ceph(t, "osd", "pool", "application", "enable", "data", "rados")
	c.WaitHealthy(t)
	blob := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(blob, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		c.Run(t, "rados", "-p", "data", "put", fmt.Sprintf("object-%d", i), blob)
	}
	want := c.Status(t)
	stats(t, seed, "the seed's report of the new pool and objects", func(s *rstats.ClusterStats) bool {
		return s.GetData().GetPools().GetPools() == int32(want.PGMap.Pools) && s.GetData().GetObjects().GetObjectCount() >= 2
	})
	got := sameOnBothWires(t, seed, v1, "HEALTH_OK")
	if m := got.GetServices().GetMon(); got.GetId() != c.FSID || got.GetStatus() != cephv1.ClusterHealth_CLUSTER_HEALTH_OK ||
		!slices.Equal(m.GetQuorum(), want.QuorumNames) || m.GetCreatedSince() == nil || got.GetData().GetObjects().GetSize() < 2<<20 ||
		got.GetData().GetUsage().GetTotal() != want.PGMap.Total {
		t.Errorf("v1 stats %v; want %s CLUSTER_HEALTH_OK, quorum %v, ≥ 2 MiB stored, total %d", got, c.FSID, want.QuorumNames, want.PGMap.Total)
	}
	pools := strings.Fields(c.Ceph(t, "osd", "pool", "ls"))
	recs := recommendations(t, v1, "one per single-copy pool and the lone monitor", func(rs []*cephv1.ClusterRecommendation) bool {
		return len(rs) == len(pools)+1
	})
	for _, p := range pools {
		if !hasRecommendation(recs, "Pool - "+p+": Replicated size less than 3", cephv1.RecommendationLevel_RECOMMENDATION_LEVEL_CRITICAL, "1", "3") {
			t.Errorf("pool %s (one copy): no CRITICAL size recommendation in %v", p, recs)
		}
	}
	if !hasRecommendation(recs, "Monitors: fewer than 3", cephv1.RecommendationLevel_RECOMMENDATION_LEVEL_HIGH, "1", "3") {
		t.Errorf("one monitor: no recommendation in %v", recs)
	}

	// The cluster changes: three copies for data, served from one. Its PGs cannot place the
	// copies on one OSD (HEALTH_WARN), and the recommendation moves from size to min_size.
	c.Ceph(t, "osd", "pool", "set", "data", "size", "3", "--yes-i-really-mean-it")
	c.Ceph(t, "osd", "pool", "set", "data", "min_size", "1")
	recs = recommendations(t, v1, "data's min_size instead of its size", func(rs []*cephv1.ClusterRecommendation) bool {
		return hasRecommendation(rs, "Pool - data: min_size less than 2", cephv1.RecommendationLevel_RECOMMENDATION_LEVEL_HIGH, "1", "2")
	})
	if slices.ContainsFunc(recs, func(r *cephv1.ClusterRecommendation) bool {
		return r.GetTitle() == "Pool - data: Replicated size less than 3"
	}) {
		t.Errorf("data has three copies now: %v", recs)
	}
	warn := sameOnBothWires(t, seed, v1, "HEALTH_WARN")
	if warn.GetStatus() != cephv1.ClusterHealth_CLUSTER_HEALTH_WARN || len(warn.GetCrashes()) == 0 {
		t.Errorf("v1 stats after undersizing data: %v; want CLUSTER_HEALTH_WARN with its checks", warn)
	}
}

// sameOnBothWires waits until the seed's wire reports health and both wires answer one view
// (the collector refreshes between two calls): every figure of GetClusterStats, the radar, the
// nodes and the resources equal, mapped. It returns the v1 stats.
func sameOnBothWires(t *testing.T, seed statspb.StatsServiceClient, v1 koorstats.StatsServiceClient, health string) *cephv1.ClusterStats {
	t.Helper()
	var got *cephv1.ClusterStats
	eventually(t, time.Minute, "both wires to answer the same "+health+" view", func() (bool, string) {
		a, err := seed.GetClusterStats(authed(t), &statspb.GetClusterStatsRequest{})
		if err != nil {
			return false, err.Error()
		}
		b, err := v1.GetClusterStats(authed(t), &koorstats.GetClusterStatsRequest{})
		if err != nil {
			return false, err.Error()
		}
		ra, err := seed.GetClusterRadar(authed(t), &statspb.GetClusterRadarRequest{})
		if err != nil {
			return false, err.Error()
		}
		rb, err := v1.GetClusterRadar(authed(t), &koorstats.GetClusterRadarRequest{})
		if err != nil {
			return false, err.Error()
		}
		na, err := seed.GetClusterNodes(authed(t), &statspb.GetClusterNodesRequest{})
		if err != nil {
			return false, err.Error()
		}
		nb, err := v1.GetClusterNodes(authed(t), &koorstats.GetClusterNodesRequest{})
		if err != nil {
			return false, err.Error()
		}
		qa, err := seed.GetClusterResources(authed(t), &statspb.GetClusterResourcesRequest{})
		if err != nil {
			return false, err.Error()
		}
		qb, err := v1.GetClusterResources(authed(t), &koorstats.GetClusterResourcesRequest{})
		if err != nil {
			return false, err.Error()
		}
		got = b.GetStats()
		if a.GetStats().GetStatus() != health {
			return false, "seed status " + a.GetStats().GetStatus()
		}
		if d := statsDiff(a.GetStats(), got); d != "" {
			return false, d
		}
		r1, r2 := ra.GetRadar(), rb.GetRadar()
		if r1.GetClusterHealth() != r2.GetClusterHealth() || r1.GetNodesHealth() != r2.GetNodesHealth() || r1.GetCapacityAvailable() != r2.GetCapacityAvailable() ||
			r1.GetStability() != r2.GetStability() || r1.GetReliability() != r2.GetReliability() {
			return false, fmt.Sprintf("radar %v, v1 %v", r1, r2)
		}
		// No node or Kubernetes source: both lists empty, on both wires.
		if len(na.GetNodes()) != len(nb.GetNodes()) || len(qa.GetResources()) != len(qb.GetResources()) || len(qa.GetDeployments()) != len(qb.GetDeployments()) {
			return false, fmt.Sprintf("nodes %v / %v, resources %v / %v", na, nb, qa, qb)
		}
		return true, ""
	})
	return got
}

// statsDiff says how the v1 answer differs from the seed's, read as the seed's wire writes
// each figure ("" when they agree).
func statsDiff(a *rstats.ClusterStats, b *cephv1.ClusterStats) string {
	var d []string
	check := func(what string, ok bool) {
		if !ok {
			d = append(d, what)
		}
	}
	health := map[string]cephv1.ClusterHealth{"HEALTH_OK": cephv1.ClusterHealth_CLUSTER_HEALTH_OK,
		"HEALTH_WARN": cephv1.ClusterHealth_CLUSTER_HEALTH_WARN, "HEALTH_ERR": cephv1.ClusterHealth_CLUSTER_HEALTH_ERR}
	check("id", a.GetId() == b.GetId())
	check("status", health[a.GetStatus()] == b.GetStatus())
	var ca, cb []string
	for _, c := range a.GetCrashes() {
		ca = append(ca, c.GetDescription())
	}
	for _, c := range b.GetCrashes() {
		cb = append(cb, c.GetDescription())
	}
	check("crashes", slices.Equal(ca, cb))
	sa, sb := a.GetServices(), b.GetServices()
	check("mon", sa.GetMon().GetDaemonCount() == sb.GetMon().GetDaemonCount() && sa.GetMon().GetQuorum() == strings.Join(sb.GetMon().GetQuorum(), ",") &&
		proto.Equal(sa.GetMon().GetCreatedAt(), sb.GetMon().GetCreatedSince()) && proto.Equal(sa.GetMon().GetUpdatedAt(), sb.GetMon().GetUpdatedSince()))
	check("mgr", sa.GetMgr().GetActive() == sb.GetMgr().GetActive() && slices.Equal(sa.GetMgr().GetStandbys(), sb.GetMgr().GetStandbys()) &&
		proto.Equal(sa.GetMgr().GetUpdatedAt(), sb.GetMgr().GetUpdatedSince()))
	check("mds", sa.GetMds().GetDaemonsUp() == sb.GetMds().GetDaemonsUp() && sa.GetMds().GetHotStandbyCount() == sb.GetMds().GetHotStandbyCount())
	check("osd", sa.GetOsd().GetOsdCount() == sb.GetOsd().GetOsdCount() && sa.GetOsd().GetOsdUp() == sb.GetOsd().GetOsdUp() &&
		sa.GetOsd().GetOsdIn() == sb.GetOsd().GetOsdIn() && proto.Equal(sa.GetOsd().GetOsdUpUpdatedAt(), sb.GetOsd().GetOsdUpUpdatedSince()) &&
		proto.Equal(sa.GetOsd().GetOsdInUpdatedAt(), sb.GetOsd().GetOsdInUpdatedSince()))
	check("rgw", sa.GetRgw().GetActiveDaemon() == sb.GetRgw().GetActiveDaemon() && sa.GetRgw().GetHostCount() == sb.GetRgw().GetHostCount() &&
		sa.GetRgw().GetZoneCount() == sb.GetRgw().GetZoneCount())
	da, db := a.GetData(), b.GetData()
	check("volumes", da.GetVolumes() == db.GetVolumes())
	check("pools", da.GetPools().GetPools() == db.GetPools().GetPools() && da.GetPools().GetPgs().GetActiveClean() == db.GetPools().GetPgs().GetActiveClean())
	check("objects", da.GetObjects().GetObjectCount() == db.GetObjects().GetObjectCount() && da.GetObjects().GetSize() == statsgrpc.FormatBytes(db.GetObjects().GetSize()))
	check("usage", da.GetUsage().GetUsed() == db.GetUsage().GetUsed() && da.GetUsage().GetAvailable() == db.GetUsage().GetAvailable() &&
		da.GetUsage().GetTotal() == db.GetUsage().GetTotal())
	ia, ib := a.GetIops(), b.GetIops()
	check("iops", ia.GetClientRead() == statsgrpc.FormatBytes(ib.GetClientRead())+"/s rd" && ia.GetClientWrite() == statsgrpc.FormatBytes(ib.GetClientWrite())+"/s wr" &&
		ia.GetClientReadOps() == fmt.Sprintf("%d ops/s rd", ib.GetClientReadOps()) && ia.GetClientWriteOps() == fmt.Sprintf("%d ops/s wr", ib.GetClientWriteOps()))
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprintf("differ in %v: seed %v, v1 %v", d, a, b)
}

// recommendations waits for ListClusterRecommendations to answer and cond to hold.
func recommendations(t *testing.T, c koorstats.StatsServiceClient, what string, cond func([]*cephv1.ClusterRecommendation) bool) []*cephv1.ClusterRecommendation {
	t.Helper()
	var last []*cephv1.ClusterRecommendation
	eventually(t, time.Minute, what, func() (bool, string) {
		r, err := c.ListClusterRecommendations(authed(t), &koorstats.ListClusterRecommendationsRequest{})
		if err != nil {
			return false, err.Error()
		}
		last = r.GetRecommendations()
		return cond(last), fmt.Sprint(last)
	})
	return last
}

func hasRecommendation(rs []*cephv1.ClusterRecommendation, title string, level cephv1.RecommendationLevel, current, expected string) bool {
	return slices.ContainsFunc(rs, func(r *cephv1.ClusterRecommendation) bool {
		v := r.GetRecommendedValue()
		return r.GetTitle() == title && r.GetLevel() == level && v.GetCurrent() == current && v.GetExpected() == expected
	})
}
