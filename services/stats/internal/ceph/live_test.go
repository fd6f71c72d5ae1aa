package ceph

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/stats/internal/cephtest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestSourcesReadARealCluster reads one real cluster through the dashboard and through the
// prometheus module and checks both against `ceph status`.
func TestSourcesReadARealCluster(t *testing.T) {
	t.Parallel()
	c := cephtest.Start(t, cephtest.Options{Dashboard: true})
	c.Ceph(t, "osd", "pool", "create", "rbd", "8")
	c.Run(t, "rbd", "pool", "init", "rbd")
	c.Run(t, "rbd", "create", "rbd/vol1", "--size", "8M")
	c.WaitHealthy(t)
	st := c.Status(t) // the oracle: what the mon says, independently of the mgr

	u, _ := url.Parse(c.DashboardURL)
	u.User = url.UserPassword(c.DashboardUser, c.DashboardPassword)
	src, err := New(Config{URL: u.String() + "/api"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.ReadCeph(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if got.FSID != st.FSID || got.FSID != c.FSID || got.Health != st.Health.Status || got.OSDs != st.OSDMap.Num ||
		got.OSDsUp != st.OSDMap.Up || got.OSDsIn != st.OSDMap.In || len(got.Pools) != st.PGMap.Pools ||
		got.ActiveCleanPGs() != st.PGMap.PGs || got.Usage.Total != st.PGMap.Total {
		t.Fatalf("dashboard read %+v\n`ceph status` says %+v", got, st)
	}
	if strings.Join(got.Quorum, ",") != strings.Join(st.QuorumNames, ",") || got.MgrActive != "x" || got.MonCreated.IsZero() {
		t.Fatalf("quorum %v (want %v) mgr %q created %v", got.Quorum, st.QuorumNames, got.MgrActive, got.MonCreated)
	}
	if !got.VolumesKnown || got.Volumes != 1 {
		t.Fatalf("volumes %d known %v, want the one RBD image", got.Volumes, got.VolumesKnown)
	}

	// An expired token is renewed on the 401.
	dash := src.(*Dashboard)
	dash.token = "expired-token"
	if _, err := src.ReadCeph(ctxT(t)); err != nil || dash.token == "expired-token" {
		t.Fatalf("a refused token was not renewed: %v", err)
	}

	// A wrong password is refused, and said so without the password.
	bad, err := New(Config{URL: c.DashboardURL, User: c.DashboardUser, Password: "wrong-password-9"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.ReadCeph(ctxT(t))
	if !errors.Is(err, ErrLoginRefused) || strings.Contains(err.Error(), "wrong-password-9") {
		t.Fatalf("wrong password: %v", err)
	}

	prom, err := New(Config{URL: c.PrometheusURL})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := prom.(*Prometheus); !ok {
		t.Fatalf("a …/metrics URL must select the prometheus module, got %T", prom)
	}
	pm, err := prom.ReadCeph(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if pm.Health != st.Health.Status || pm.OSDs != st.OSDMap.Num || pm.OSDsUp != st.OSDMap.Up || len(pm.Pools) != st.PGMap.Pools ||
		pm.ActiveCleanPGs() != st.PGMap.PGs || pm.Usage.Total != st.PGMap.Total || strings.Join(pm.Quorum, ",") != "a" {
		t.Fatalf("prometheus read %+v\n`ceph status` says %+v", pm, st)
	}
}
