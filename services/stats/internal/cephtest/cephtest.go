// Package cephtest starts a real, throw-away, single-node Ceph cluster for one test — one mon,
// one mgr (prometheus module, and optionally the dashboard), one OSD on the RAM-backed memstore
// and optionally a radosgw — with libs/platform/cephlocal (the same code `make up`'s dev Ceph
// runs), on loopback ports chosen for the test, with every file under a temporary directory.
// When the test ends every daemon is killed and reaped, so nothing outlives it.
//
//	c := cephtest.Start(t, cephtest.Options{Dashboard: true})
//	c.Ceph(t, "osd", "set", "noout")
//	c.Run(t, "rados", "-p", "data", "put", "obj", file)
//
// Missing packages skip the test, or fail it under PLINTH_TEST_STRICT=1 (see testenv).
package cephtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/cephlocal"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// readyTimeout bounds how long a cluster may take to become healthy. Measured: ~10 s on an
// idle 2-core machine, ~20 s on a busy one.
const readyTimeout = 3 * time.Minute

// Options say what to run besides the mon, mgr and OSD.
type Options struct {
	// Dashboard enables the mgr dashboard module (plain HTTP) and creates an administrator.
	Dashboard bool
	// RGW also runs a radosgw serving S3 on RGWURL (needs the radosgw package).
	RGW bool
	// MemstoreBytes is the OSD's capacity; default 1 GiB. The OSD reports OSD_FULL when it is
	// used up, and its memory grows with what is written: write little.
	MemstoreBytes int64
}

// Cluster is a running cluster, private to one test.
type Cluster struct {
	// Dir holds every file of the cluster: ceph.conf, keyrings, daemon data, logs.
	Dir string
	// Conf is the ceph.conf that clients (ceph, rados, rbd) use through CEPH_CONF.
	Conf string
	// FSID is the cluster's id.
	FSID string
	// PrometheusURL is the mgr prometheus module's metrics endpoint (…/metrics).
	PrometheusURL string
	// DashboardURL is the mgr dashboard's base URL (http://127.0.0.1:PORT), when enabled.
	DashboardURL string
	// DashboardUser and DashboardPassword log in to the dashboard as an administrator.
	DashboardUser, DashboardPassword string
	// RGWURL is the radosgw's S3 endpoint, when enabled.
	RGWURL string

	local *cephlocal.Cluster
}

// Start runs a cluster for this test and returns once it is HEALTH_OK with its OSD up and in,
// every placement group active+clean, and the prometheus endpoint (and the dashboard and
// radosgw when asked for) answering.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	lo := cephlocal.Options{Dir: clusterDir(t), Dashboard: o.Dashboard, RGW: o.RGW,
		MemstoreBytes: o.MemstoreBytes, ReadyTimeout: readyTimeout}
	if err := cephlocal.LookBinaries(lo); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	lo.Ports = ReservePorts(t)
	local, err := cephlocal.Start(context.Background(), lo)
	if err != nil {
		t.Fatalf("cephtest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cephtest: logs of the failed test's cluster:%s", local.LogTails(20))
		}
		local.Kill()
	})
	c := &Cluster{Dir: local.Dir(), Conf: local.Conf(), FSID: local.FSID(), PrometheusURL: local.PrometheusURL(),
		DashboardURL: local.DashboardURL(), RGWURL: local.RGWURL(), local: local}
	if o.Dashboard {
		c.DashboardUser = cephlocal.DashboardUser
		if c.DashboardPassword, err = local.DashboardPassword(); err != nil {
			t.Fatalf("cephtest: %v", err)
		}
	}
	t.Logf("cephtest: cluster %s ready in %v (dir %s)", c.FSID, local.StartupTime().Round(100*time.Millisecond), c.Dir)
	return c
}

// Local is the cluster as cephlocal runs it (RSS, PIDs, S3 users and buckets).
func (c *Cluster) Local() *cephlocal.Cluster { return c.local }

// clusterDir is a short temp dir: the admin sockets under it must fit the 107-byte unix socket
// path limit, which t.TempDir's long names (from long test names) exceed.
func clusterDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "ceph")
	if err != nil {
		t.Fatal(err)
	}
	// Runs after the daemons' cleanup (registered later, run earlier).
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// Ceph runs the ceph CLI against the cluster and returns its stdout; it fails the test on error.
func (c *Cluster) Ceph(t testing.TB, args ...string) string {
	t.Helper()
	return c.Run(t, "ceph", args...)
}

// Run runs a Ceph client program (ceph, rados, rbd, …) against the cluster and returns its
// stdout; it fails the test on error.
func (c *Cluster) Run(t testing.TB, program string, args ...string) string {
	t.Helper()
	out, err := c.local.Run(context.Background(), program, args...)
	if err != nil {
		t.Fatalf("cephtest: %v", err)
	}
	return out
}

// Status is cephlocal's reading of `ceph status`.
type Status = cephlocal.Status

// Status reads `ceph status`.
func (c *Cluster) Status(t testing.TB) Status {
	t.Helper()
	st, err := c.local.Status(context.Background())
	if err != nil {
		t.Fatalf("cephtest: %v", err)
	}
	return st
}

// WaitHealthy waits until the cluster is healthy again (after a test changed it).
func (c *Cluster) WaitHealthy(t testing.TB) {
	t.Helper()
	if err := c.local.WaitHealthy(context.Background()); err != nil {
		t.Fatalf("cephtest: %v", err)
	}
}
