package grpc

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	koorstats "github.com/plinth-dev/plinth/libs/api/api/services/stats/v1"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// The v1 server answers from the same collector as the seed's, with the same errors.
func TestStatsV1AnswersAsTheSeed(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	ceph := &cluster.Ceph{FSID: "f", Health: cluster.HealthOK, Mons: []string{"a"}, Pools: []cluster.Pool{{Name: "p", Size: 1, MinSize: 1}}}
	col := collectorWith(t, ceph, nil, nil)
	seed, v1 := NewStatsServer(col, log), NewStatsV1Server(col, log)
	a, err := seed.GetClusterRadar(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := v1.GetClusterRadar(ctx, nil)
	if err != nil || b.GetRadar().GetClusterHealth() != a.GetRadar().GetClusterHealth() || b.GetRadar().GetReliability() != a.GetRadar().GetReliability() {
		t.Errorf("radar %v %v, seed %v", b, err, a)
	}
	if s, err := v1.GetClusterStats(ctx, nil); err != nil || s.GetStats().GetId() != "f" {
		t.Errorf("stats %v %v", s, err)
	}
	if r, err := v1.ListClusterRecommendations(ctx, nil); err != nil || len(r.GetRecommendations()) != 2 {
		t.Errorf("recommendations of one single-copy pool and one monitor: %v %v", r, err)
	}
	if r, err := v1.GetClusterResources(ctx, nil); err != nil || len(r.GetResources())+len(r.GetDeployments()) != 0 {
		t.Errorf("resources without Kubernetes: %v %v", r, err)
	}

	nothing := NewStatsV1Server(collectorWith(t, nil, nil, errors.New("refused")), log)
	for name, call := range map[string]func() error{
		"stats":           func() error { _, err := nothing.GetClusterStats(ctx, &koorstats.GetClusterStatsRequest{}); return err },
		"nodes":           func() error { _, err := nothing.GetClusterNodes(ctx, nil); return err },
		"radar":           func() error { _, err := nothing.GetClusterRadar(ctx, nil); return err },
		"recommendations": func() error { _, err := nothing.ListClusterRecommendations(ctx, nil); return err },
		"resources":       func() error { _, err := nothing.GetClusterResources(ctx, nil); return err },
	} {
		if err := call(); status.Code(err) != codes.Unavailable {
			t.Errorf("%s before any source answered: %v, want Unavailable", name, err)
		}
	}
}
