// Package cephlocal runs a private, single-node Ceph cluster from Debian's packages — one mon,
// one mgr (prometheus module, optionally the dashboard), one OSD on the RAM-backed memstore and
// optionally a radosgw — on loopback ports, with every file under one directory: `make up`'s
// dev Ceph and the stats tests' clusters.
//
// A directory that already holds a cluster is started again (same fsid, keys and data; the mon
// is re-addressed when the ports changed). Stop ends the daemons gracefully, so the OSD writes
// its memstore to disk and the next Start finds the objects; Kill throws that away.
package cephlocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Options configures Start.
type Options struct {
	// Dir holds the cluster: ceph.conf, keyrings, daemon data, logs. An empty or absent
	// directory gets a new cluster; one Start made before is started again. Keep the path
	// short: the daemons' admin sockets under it must fit a unix socket path (107 bytes).
	Dir string
	// Ports are the cluster's loopback ports (PortsAt(base)); zero picks a free block.
	Ports Ports
	// Dashboard enables the mgr dashboard module (plain HTTP) with an administrator.
	Dashboard bool
	// RGW also runs a radosgw serving S3 on RGWURL.
	RGW bool
	// ServeAddr is the address the dashboard, the prometheus module and the radosgw listen
	// on (default 127.0.0.1; "0.0.0.0" in a container whose neighbours read them). The mon,
	// the OSD and their ports stay on loopback, and the URLs this package gives name
	// 127.0.0.1 either way.
	ServeAddr string
	// MemstoreBytes is the OSD's capacity; default 1 GiB. The OSD's memory grows with what is
	// stored (~2.5× the bytes written) and it reports OSD_FULL when the capacity is used up.
	MemstoreBytes int64
	// ReadyTimeout bounds the wait for the cluster to become healthy; default 3 minutes.
	ReadyTimeout time.Duration
	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger
}

// DashboardUser is the administrator Start creates in the dashboard.
const DashboardUser = "plinth"

// Cluster is a running cluster.
type Cluster struct {
	dir, conf string
	fsid      string
	ports     Ports
	opts      Options
	log       *slog.Logger
	fresh     bool
	daemons   []*daemon
	startTook time.Duration

	stopOnce sync.Once
	stopErr  error
}

// state is what Start records in cluster.json once a new cluster's OSD exists.
type state struct {
	FSID string `json:"fsid"`
	Base int    `json:"port_base"`
}

const (
	stateFile   = "cluster.json"
	defaultSize = 1 << 30
)

// Start runs the cluster in o.Dir and returns once it is HEALTH_OK with its OSD up and in,
// every placement group active+clean, and the prometheus endpoint (and the dashboard and the
// radosgw when asked for) answering. On error every daemon it started is stopped.
func Start(ctx context.Context, o Options) (_ *Cluster, err error) {
	began := time.Now()
	if o.Dir == "" {
		return nil, errors.New("cephlocal: Options.Dir is required")
	}
	if err := LookBinaries(o); err != nil {
		return nil, err
	}
	if o.MemstoreBytes <= 0 {
		o.MemstoreBytes = defaultSize
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 3 * time.Minute
	}
	if o.Ports == (Ports{}) {
		if o.Ports, err = FreePorts(); err != nil {
			return nil, err
		}
	}
	if err := o.Ports.validate(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("cephlocal: %w", err)
	}
	c := &Cluster{dir: dir, conf: filepath.Join(dir, "ceph.conf"), ports: o.Ports, opts: o, log: o.Logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if err := stopStale(dir, c.conf); err != nil {
		return nil, err
	}
	if port := o.Ports.Busy(); port != 0 {
		return nil, fmt.Errorf("cephlocal: port %d (of %d-%d) is in use: stop what listens there or choose other ports",
			port, o.Ports.Base(), o.Ports.DaemonMax)
	}
	ctx, cancel := context.WithTimeout(ctx, o.ReadyTimeout)
	defer cancel()
	defer func() {
		if err != nil {
			_ = c.stopDaemons(0)
		}
	}()
	if err := c.startDaemons(ctx); err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	c.startTook = time.Since(began)
	c.log.Info("Ceph cluster ready", "fsid", c.fsid, "dir", dir, "took", c.startTook.Round(100*time.Millisecond), "new", c.fresh)
	return c, nil
}

// startDaemons bootstraps a new cluster or prepares the existing one, then starts the mon,
// the mgr, the OSD and the radosgw.
func (c *Cluster) startDaemons(ctx context.Context) error {
	st, err := readState(c.dir)
	if err != nil {
		return err
	}
	c.fresh = st.FSID == ""
	if c.fresh {
		if err := c.bootstrap(ctx); err != nil {
			return err
		}
	} else {
		c.fsid = st.FSID
		if err := c.reuse(ctx, st); err != nil {
			return err
		}
	}
	if err := c.startDaemon("mon.a", "ceph-mon", "-i", "a"); err != nil {
		return err
	}
	if err := c.configureModules(ctx); err != nil {
		return err
	}
	if err := c.startDaemon("mgr.x", "ceph-mgr", "-i", "x"); err != nil {
		return err
	}
	if c.fresh {
		if err := c.createOSD(ctx); err != nil {
			return err
		}
		if err := writeState(c.dir, state{FSID: c.fsid, Base: c.ports.Base()}); err != nil {
			return err
		}
	}
	if err := c.startDaemon("osd.0", "ceph-osd", "-i", "0"); err != nil {
		return err
	}
	if c.opts.RGW {
		return c.startDaemon("client.rgw.x", "radosgw", "-n", "client.rgw.x")
	}
	return nil
}

// waitReady waits for health and for every requested endpoint.
func (c *Cluster) waitReady(ctx context.Context) error {
	if err := c.waitHealthy(ctx); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, c.PrometheusURL()); err != nil {
		return fmt.Errorf("cephlocal: prometheus module: %w", err)
	}
	if c.opts.Dashboard {
		if err := c.setUpDashboard(ctx); err != nil {
			return fmt.Errorf("cephlocal: dashboard: %w", err)
		}
	}
	if c.opts.RGW {
		if err := c.waitHTTP(ctx, c.RGWURL()); err != nil {
			return fmt.Errorf("cephlocal: radosgw: %w", err)
		}
		// radosgw creates its pools (.rgw.root, default.rgw.log/control/meta) while it
		// starts, possibly after the first health wait passed: their PGs are still
		// creating+peering when it first answers HTTP.
		if err := c.waitHealthy(ctx); err != nil {
			return fmt.Errorf("cephlocal: after radosgw created its pools: %w", err)
		}
	}
	return nil
}

func readState(dir string) (state, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return state{}, nil
	}
	var st state
	if err == nil {
		err = json.Unmarshal(data, &st)
	}
	if err != nil || st.FSID == "" {
		return state{}, fmt.Errorf("cephlocal: %s/%s is unreadable (%v): remove %s to start a new cluster", dir, stateFile, err, dir)
	}
	return st, nil
}

func writeState(dir string, st state) error {
	data, _ := json.Marshal(st)
	return os.WriteFile(filepath.Join(dir, stateFile), data, 0o644)
}

// Stop ends the daemons gracefully (radosgw, OSD, mgr, mon; SIGKILL after 60 s each), so the
// OSD saves its memstore for the next Start. Calling it again returns the first result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.stopErr = c.stopDaemons(60 * time.Second)
		c.log.Info("Ceph cluster stopped", "dir", c.dir)
	})
	return c.stopErr
}

// Kill ends every daemon at once (SIGKILL) and waits until they are reaped: for clusters whose
// data is thrown away. The memstore's contents since the last Start are lost.
func (c *Cluster) Kill() {
	c.stopOnce.Do(func() { c.stopErr = c.stopDaemons(0) })
}

// Dir is the cluster's directory.
func (c *Cluster) Dir() string { return c.dir }

// Conf is the ceph.conf that clients (ceph, rados, rbd) use through CEPH_CONF.
func (c *Cluster) Conf() string { return c.conf }

// FSID is the cluster's id.
func (c *Cluster) FSID() string { return c.fsid }

// Ports are the cluster's loopback ports.
func (c *Cluster) Ports() Ports { return c.ports }

// Fresh reports whether this Start created the cluster (false: an existing one started again).
func (c *Cluster) Fresh() bool { return c.fresh }

// StartupTime is how long Start took until every requested endpoint answered.
func (c *Cluster) StartupTime() time.Duration { return c.startTook }

// PrometheusURL is the mgr prometheus module's metrics endpoint (…/metrics).
func (c *Cluster) PrometheusURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", c.ports.Prometheus)
}

// DashboardURL is the mgr dashboard's base URL (http://127.0.0.1:PORT), when enabled.
func (c *Cluster) DashboardURL() string {
	if !c.opts.Dashboard {
		return ""
	}
	return fmt.Sprintf("http://127.0.0.1:%d", c.ports.Dashboard)
}

// DashboardPasswordFile holds the dashboard administrator's password (mode 0600).
func (c *Cluster) DashboardPasswordFile() string { return filepath.Join(c.dir, "dashboard.pw") }

// RGWURL is the radosgw's S3 endpoint (http://127.0.0.1:PORT), when enabled.
func (c *Cluster) RGWURL() string {
	if !c.opts.RGW {
		return ""
	}
	return fmt.Sprintf("http://127.0.0.1:%d", c.ports.RGW)
}

// RSS is the resident memory of each running daemon by name (mon.a, mgr.x, osd.0,
// client.rgw.x), in bytes.
func (c *Cluster) RSS() map[string]int64 {
	out := map[string]int64{}
	for _, d := range c.daemons {
		out[d.name] = rssBytes(d.cmd.Process.Pid)
	}
	return out
}

// PIDs are the running daemons' process ids by name.
func (c *Cluster) PIDs() map[string]int {
	out := map[string]int{}
	for _, d := range c.daemons {
		out[d.name] = d.cmd.Process.Pid
	}
	return out
}

// LogTails is the end of every daemon's log: why a cluster misbehaved is nearly always there.
func (c *Cluster) LogTails(lines int) string {
	var b strings.Builder
	for _, name := range stopOrder {
		b.WriteString(c.logTail(name, lines))
	}
	return b.String()
}
