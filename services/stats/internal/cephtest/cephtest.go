// Package cephtest starts a real, throw-away, single-node Ceph cluster for one test — one mon,
// one mgr (prometheus module, and optionally the dashboard), one OSD on the RAM-backed memstore
// and optionally a radosgw — from Debian's Ceph packages, on loopback ports chosen for the test,
// with every file under the test's temporary directory. When the test ends every daemon is
// killed and reaped, so nothing outlives it.
//
//	c := cephtest.Start(t, cephtest.Options{Dashboard: true})
//	c.Ceph(t, "osd", "set", "noout")
//	c.Run(t, "rados", "-p", "data", "put", "obj", file)
//
// Missing packages skip the test, or fail it under PLINTH_TEST_STRICT=1 (see testenv).
package cephtest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// Packages are the Debian packages the helper needs, for the skip message and CI.
const Packages = "ceph-mon ceph-mgr ceph-osd ceph-common ceph-mgr-dashboard radosgw"

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

	ports     ports
	daemons   []*daemon
	startTook time.Duration
}

// StartupTime is how long Start took until every requested endpoint answered.
func (c *Cluster) StartupTime() time.Duration { return c.startTook }

// Start runs a cluster for this test and returns once it is HEALTH_OK with its OSD up and in,
// every placement group active+clean, and the prometheus endpoint (and the dashboard and
// radosgw when asked for) answering.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	began := time.Now()
	if err := lookBinaries(o); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	if o.MemstoreBytes <= 0 {
		o.MemstoreBytes = 1 << 30
	}
	c := &Cluster{Dir: clusterDir(t), FSID: uuid.NewString()}
	c.Conf = filepath.Join(c.Dir, "ceph.conf")
	c.ports = reservePorts(t)
	// Registered before any daemon starts, so it runs after their own cleanups are queued:
	// on a failed start the logs explain why.
	t.Cleanup(func() {
		if t.Failed() {
			c.logTails(t)
		}
	})
	if err := c.bootstrap(o); err != nil {
		t.Fatalf("cephtest: %v", err)
	}
	c.startDaemon(t, "mon.a", "ceph-mon", "-i", "a")
	if err := c.configureModules(); err != nil {
		t.Fatalf("cephtest: %v", err)
	}
	c.startDaemon(t, "mgr.x", "ceph-mgr", "-i", "x")
	if err := c.createOSD(); err != nil {
		t.Fatalf("cephtest: %v", err)
	}
	c.startDaemon(t, "osd.0", "ceph-osd", "-i", "0")
	if o.RGW {
		c.RGWURL = fmt.Sprintf("http://127.0.0.1:%d", c.ports.rgw)
		c.startDaemon(t, "client.rgw.x", "radosgw", "-n", "client.rgw.x")
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := c.waitHealthy(ctx); err != nil {
		t.Fatalf("cephtest: %v", err)
	}
	c.PrometheusURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", c.ports.prometheus)
	if err := c.waitHTTP(ctx, c.PrometheusURL); err != nil {
		t.Fatalf("cephtest: prometheus module: %v", err)
	}
	if o.Dashboard {
		if err := c.setUpDashboard(ctx); err != nil {
			t.Fatalf("cephtest: dashboard: %v", err)
		}
	}
	if o.RGW {
		if err := c.waitHTTP(ctx, c.RGWURL); err != nil {
			t.Fatalf("cephtest: radosgw: %v", err)
		}
	}
	c.startTook = time.Since(began)
	t.Logf("cephtest: cluster %s ready in %v (dir %s)", c.FSID, c.startTook.Round(100*time.Millisecond), c.Dir)
	return c
}

// lookBinaries checks that the packages are installed before anything starts.
func lookBinaries(o Options) error {
	need := []string{"ceph-mon", "ceph-mgr", "ceph-osd", "ceph", "ceph-authtool", "monmaptool", "rados", "rbd"}
	if o.RGW {
		need = append(need, "radosgw")
	}
	var missing []string
	for _, b := range need {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if o.Dashboard {
		if _, err := os.Stat("/usr/share/ceph/mgr/dashboard"); err != nil {
			missing = append(missing, "the mgr dashboard module")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("cephtest: %s not found: apt-get install %s", strings.Join(missing, ", "), Packages)
	}
	return nil
}

// clusterDir is the test's temp dir, or a short one beside it when the admin sockets under it
// would exceed the 107-byte unix socket path limit (long test names make long temp dirs).
func clusterDir(t testing.TB) string {
	dir := t.TempDir()
	if len(dir) <= 48 {
		return dir
	}
	short, err := os.MkdirTemp("", "ceph")
	if err != nil {
		t.Fatal(err)
	}
	// Runs after the daemons' cleanups (registered later, run earlier).
	t.Cleanup(func() { _ = os.RemoveAll(short) })
	return short
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
	out, err := c.run(program, args...)
	if err != nil {
		t.Fatalf("cephtest: %v", err)
	}
	return out
}

// Command is an *exec.Cmd for a Ceph client program, with CEPH_CONF pointing at the cluster.
func (c *Cluster) Command(ctx context.Context, program string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Env = append(os.Environ(), "CEPH_CONF="+c.Conf)
	return cmd
}

func (c *Cluster) run(program string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := c.Command(ctx, program, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", program, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// bootstrap writes ceph.conf and every keyring and creates the mon's store, as vstart.sh does
// by hand. The mgr, OSD and radosgw keys are imported into the mon's store at mkfs, which
// saves a round of CLI calls once the mon runs.
func (c *Cluster) bootstrap(o Options) error {
	for _, d := range []string{"mon/ceph-a", "mgr/ceph-x", "osd/ceph-0", "rgw/ceph-x", "run", "log", "crash"} {
		if err := os.MkdirAll(filepath.Join(c.Dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(c.Conf, []byte(c.config(o)), 0o644); err != nil {
		return err
	}
	monKeyring := filepath.Join(c.Dir, "mon.keyring")
	keys := []struct {
		path, name string
		caps       []string
	}{
		{monKeyring, "mon.", []string{"mon", "allow *"}},
		{filepath.Join(c.Dir, "ceph.client.admin.keyring"), "client.admin",
			[]string{"mon", "allow *", "osd", "allow *", "mds", "allow *", "mgr", "allow *"}},
		{filepath.Join(c.Dir, "mgr/ceph-x/keyring"), "mgr.x",
			[]string{"mon", "allow profile mgr", "osd", "allow *", "mds", "allow *"}},
		{filepath.Join(c.Dir, "osd/ceph-0/keyring"), "osd.0",
			[]string{"mon", "allow profile osd", "mgr", "allow profile osd", "osd", "allow *"}},
		{filepath.Join(c.Dir, "rgw/ceph-x/keyring"), "client.rgw.x",
			[]string{"mon", "allow rw", "osd", "allow rwx", "mgr", "allow rw"}},
	}
	for i, k := range keys {
		args := []string{"--create-keyring", k.path, "--gen-key", "-n", k.name}
		for j := 0; j < len(k.caps); j += 2 {
			args = append(args, "--cap", k.caps[j], k.caps[j+1])
		}
		if _, err := c.run("ceph-authtool", args...); err != nil {
			return err
		}
		if i > 0 {
			if _, err := c.run("ceph-authtool", monKeyring, "--import-keyring", k.path); err != nil {
				return err
			}
		}
	}
	monmap := filepath.Join(c.Dir, "monmap")
	if _, err := c.run("monmaptool", "--create", "--fsid", c.FSID, "--addv", "a", c.monAddrs(), monmap); err != nil {
		return err
	}
	_, err := c.run("ceph-mon", "-c", c.Conf, "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", monKeyring)
	return err
}

// configureModules waits until the mon answers, then sets the mgr modules' options, in
// parallel: each CLI call costs about half a second of Python start-up.
func (c *Cluster) configureModules() error {
	var err error
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if err = c.exitedDaemon(); err != nil {
			return err
		}
		if _, err = c.run("ceph", "--connect-timeout", "2", "mon", "stat"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the mon does not answer: %w", err)
		}
	}
	opts := c.moduleOptions()
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		wg.Go(func() { _, errs[i] = c.run("ceph", "config", "set", "mgr", o[0], o[1], "--force") })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// createOSD allocates osd.0 in the OSD map and creates its memstore.
func (c *Cluster) createOSD() error {
	id := uuid.NewString()
	out, err := c.run("ceph", "osd", "new", id)
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) != "0" {
		return fmt.Errorf("ceph osd new gave id %q, want 0", strings.TrimSpace(out))
	}
	_, err = c.run("ceph-osd", "-c", c.Conf, "-i", "0", "--mkfs", "--osd-uuid", id)
	return err
}

// Status is the part of `ceph status -f json` the helper and the tests read: what the mon says,
// independently of the mgr.
type Status struct {
	FSID   string `json:"fsid"`
	Health struct {
		Status string `json:"status"`
	} `json:"health"`
	QuorumNames []string `json:"quorum_names"`
	OSDMap      struct {
		Num int `json:"num_osds"`
		Up  int `json:"num_up_osds"`
		In  int `json:"num_in_osds"`
	} `json:"osdmap"`
	PGMap struct {
		ByState []struct {
			State string `json:"state_name"`
			Count int    `json:"count"`
		} `json:"pgs_by_state"`
		PGs   int   `json:"num_pgs"`
		Pools int   `json:"num_pools"`
		Total int64 `json:"bytes_total"`
	} `json:"pgmap"`
	MgrMap struct {
		Available bool `json:"available"`
	} `json:"mgrmap"`
}

// Status reads `ceph status`.
func (c *Cluster) Status(t testing.TB) Status {
	t.Helper()
	var st Status
	if err := json.Unmarshal([]byte(c.Ceph(t, "status", "-f", "json")), &st); err != nil {
		t.Fatalf("cephtest: ceph status: %v", err)
	}
	return st
}

// healthy: HEALTH_OK, the OSD up and in, the mgr available and every PG active+clean.
func (s Status) healthy() bool {
	clean := 0
	for _, st := range s.PGMap.ByState {
		if st.State == "active+clean" {
			clean += st.Count
		}
	}
	return s.Health.Status == "HEALTH_OK" && s.OSDMap.Up == 1 && s.OSDMap.In == 1 &&
		s.MgrMap.Available && s.PGMap.PGs > 0 && clean == s.PGMap.PGs
}

// WaitHealthy waits until the cluster is healthy again (after a test changed it).
func (c *Cluster) WaitHealthy(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := c.waitHealthy(ctx); err != nil {
		t.Fatalf("cephtest: %v", err)
	}
}

func (c *Cluster) waitHealthy(ctx context.Context) error {
	var last string
	for {
		if err := c.exitedDaemon(); err != nil {
			return err
		}
		out, err := c.run("ceph", "--connect-timeout", "5", "status", "-f", "json")
		var st Status
		if err == nil && json.Unmarshal([]byte(out), &st) == nil && st.healthy() {
			return nil
		}
		last = fmt.Sprintf("%+v %v", st, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("not healthy after %v: %s", readyTimeout, last)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// setUpDashboard waits for the dashboard module and creates an administrator with a random
// password. The module options are in ceph.conf; the user needs the module running.
func (c *Cluster) setUpDashboard(ctx context.Context) error {
	c.DashboardURL = fmt.Sprintf("http://127.0.0.1:%d", c.ports.dashboard)
	c.DashboardUser = "plinth-stats"
	secret := make([]byte, 18)
	_, _ = rand.Read(secret)
	c.DashboardPassword = base64.RawURLEncoding.EncodeToString(secret)
	pwFile := filepath.Join(c.Dir, "dashboard.pw")
	if err := os.WriteFile(pwFile, []byte(c.DashboardPassword), 0o600); err != nil {
		return err
	}
	var err error
	for {
		_, err = c.run("ceph", "dashboard", "ac-user-create", c.DashboardUser, "-i", pwFile, "administrator", "--force-password")
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
	return c.waitHTTP(ctx, c.DashboardURL+"/api/health/minimal")
}

// waitHTTP waits until url answers an HTTP request at all (any status).
func (c *Cluster) waitHTTP(ctx context.Context, url string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	var err error
	for {
		var resp *http.Response
		if resp, err = client.Get(url); err == nil {
			_ = resp.Body.Close()
			return nil
		}
		if exited := c.exitedDaemon(); exited != nil {
			return exited
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(300 * time.Millisecond):
		}
	}
}
