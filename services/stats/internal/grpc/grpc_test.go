package grpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	rstats "github.com/plinth-dev/plinth/libs/api/resources/stats"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

func TestToStatusMapsEachDomainErrorToOneCode(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	cases := []struct {
		err  error
		code codes.Code
		msg  string
	}{
		{&cluster.NoDataError{Sources: []cluster.SourceState{{Name: "ceph", Err: errors.New("dial 10.0.0.1:8443")}}},
			codes.Unavailable, "no data source has answered yet: ceph (failing)"},
		{cluster.ErrNoKoorCluster, codes.NotFound, "koor cluster Not found"},
		{fmt.Errorf("%w (no Kubernetes source is configured)", cluster.ErrNoKoorCluster), codes.NotFound, "koor cluster Not found (no Kubernetes source is configured)"},
		{context.Canceled, codes.Canceled, "request canceled"},
		{errors.New("kubernetes: pods: lister broke"), codes.Internal, "internal error"},
	}
	for _, c := range cases {
		st := status.Convert(toStatus(context.Background(), log, c.err))
		if st.Code() != c.code || st.Message() != c.msg {
			t.Errorf("%v → %v %q, want %v %q", c.err, st.Code(), st.Message(), c.code, c.msg)
		}
	}
}

func TestFormatBytesAsUpstream(t *testing.T) {
	for n, want := range map[int64]string{0: "0.00 B", 1023: "1023.00 B", 83937: "81.97 KiB", 20977048: "20.01 MiB", 1 << 50: "1.00 PiB", 1 << 62: "4096.00 PiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}

func TestClusterStatsMapping(t *testing.T) {
	at := time.Date(2026, 11, 24, 2, 17, 2, 0, time.UTC)
	s := &cluster.Ceph{FSID: "f", Health: "HEALTH_WARN",
		Checks: []cluster.Check{{Message: "noout flag(s) set"}, {Message: "1 daemons have recently crashed", Muted: true}},
		Mons:   []string{"a", "b", "c"}, Quorum: []string{"a", "c"}, MonCreated: at, MgrActive: "x", MgrStandbys: []string{"y"},
		Filesystems: 1, MDSUp: 2, MDSStandby: 1, OSDs: 3, OSDsUp: 3, OSDsIn: 2,
		Pools: []cluster.Pool{{ActiveClean: 8}, {ActiveClean: 32}}, Objects: 236, StoredBytes: 20977048,
		Usage: cluster.Usage{Used: 1, Available: 2, Total: 3}, IO: cluster.IO{ReadBytesPerSec: 83937, WriteBytesPerSec: 1746643.7, ReadOpsPerSec: 108, WriteOpsPerSec: 60.9},
		Volumes: 4, VolumesKnown: true, RGWDaemons: 2, RGWHosts: 2, RGWZones: 1}
	want := &rstats.ClusterStats{Id: "f", Status: "HEALTH_WARN",
		Crashes: []*rstats.Crash{{Description: "noout flag(s) set"}, {Description: "1 daemons have recently crashed (muted)"}},
		Services: &rstats.Services{
			Mon: &rstats.MonService{DaemonCount: 3, Quorum: "a,c", CreatedAt: ts(at)},
			Mgr: &rstats.MgrService{Active: "x", Standbys: []string{"y"}},
			Mds: &rstats.MdsService{DaemonsUp: 2, HotStandbyCount: 1},
			Osd: &rstats.OsdService{OsdCount: 3, OsdUp: 3, OsdIn: 2},
			Rgw: &rstats.RgwService{ActiveDaemon: 2, HostCount: 2, ZoneCount: 1},
		},
		Data: &rstats.Data{Volumes: 4, Pools: &rstats.Pools{Pools: 2, Pgs: &rstats.PGs{ActiveClean: 40}},
			Objects: &rstats.Objects{ObjectCount: 236, Size: "20.01 MiB"}, Usage: &rstats.Usage{Used: 1, Available: 2, Total: 3}},
		Iops: &rstats.IOPS{ClientRead: "81.97 KiB/s rd", ClientWrite: "1.67 MiB/s wr", ClientReadOps: "108 ops/s rd", ClientWriteOps: "60 ops/s wr"},
	}
	if got := clusterStats(s); !proto.Equal(got, want) {
		t.Fatalf("got\n%v\nwant\n%v", got, want)
	}
}

// staticSources feeds a real collector with fixed reports.
func collectorWith(t *testing.T, ceph *cluster.Ceph, kube *cluster.Kube, kubeErr error) *cluster.Collector {
	t.Helper()
	cfg := cluster.Config{Interval: time.Hour}
	if ceph != nil {
		cfg.Ceph = func(context.Context) (*cluster.Ceph, error) { return ceph, nil }
	}
	if kube != nil || kubeErr != nil {
		cfg.Kube = func(context.Context) (*cluster.Kube, error) { return kube, kubeErr }
	}
	c, err := cluster.NewCollector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(5 * time.Second)
	for {
		states := c.Sources()
		refreshed := true
		for _, s := range states {
			refreshed = refreshed && (s.Err != nil || !s.At.IsZero())
		}
		if refreshed {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal("the collector never refreshed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAnswersPerSourceConfiguration(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	code := func(err error) codes.Code { return status.Code(err) }

	cephOnly := NewStatsServer(collectorWith(t, &cluster.Ceph{FSID: "f", Health: cluster.HealthOK}, nil, nil), log)
	if r, err := cephOnly.GetClusterResources(ctx, &statspb.GetClusterResourcesRequest{}); err != nil || len(r.GetResources())+len(r.GetDeployments()) != 0 {
		t.Errorf("resources without Kubernetes: %v %v; want an empty answer", r, err)
	}
	if _, err := cephOnly.GetKoorCluster(ctx, &statspb.GetKoorClusterRequest{}); code(err) != codes.NotFound {
		t.Errorf("KoorCluster without Kubernetes: %v", err)
	}
	if r, err := cephOnly.GetClusterStats(ctx, &statspb.GetClusterStatsRequest{}); err != nil || r.GetStats().GetId() != "f" {
		t.Errorf("stats: %v %v", r, err)
	}

	kubeDown := NewStatsServer(collectorWith(t, &cluster.Ceph{FSID: "f"}, nil, errors.New("connection refused")), log)
	for name, call := range map[string]func() error{
		"resources": func() error { _, err := kubeDown.GetClusterResources(ctx, nil); return err },
		"koor":      func() error { _, err := kubeDown.GetKoorCluster(ctx, nil); return err },
	} {
		if err := call(); code(err) != codes.Unavailable {
			t.Errorf("%s while Kubernetes never answered: %v, want Unavailable", name, err)
		}
	}

	noKoor := NewStatsServer(collectorWith(t, nil, &cluster.Kube{Resources: []cluster.Resource{{Name: "rook-ceph"}}}, nil), log)
	if _, err := noKoor.GetKoorCluster(ctx, nil); code(err) != codes.NotFound || status.Convert(err).Message() != "koor cluster Not found" {
		t.Errorf("no KoorCluster: %v", err)
	}

	nothing := NewStatsServer(collectorWith(t, nil, nil, errors.New("refused")), log)
	for name, call := range map[string]func() error{
		"stats": func() error { _, err := nothing.GetClusterStats(ctx, nil); return err },
		"nodes": func() error { _, err := nothing.GetClusterNodes(ctx, nil); return err },
		"radar": func() error { _, err := nothing.GetClusterRadar(ctx, nil); return err },
	} {
		if err := call(); code(err) != codes.Unavailable {
			t.Errorf("%s before any source answered: %v, want Unavailable", name, err)
		}
	}
}
