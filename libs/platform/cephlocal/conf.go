package cephlocal

import (
	"fmt"
	"strings"
)

// disabledModules are mgr modules not even loaded: everything optional that is not always on
// (disabling an always-on module gives HEALTH_ERR MGR_MODULE_ERROR). Saves ~120 MB of mgr RSS.
const disabledModules = "diskprediction_local alerts influx insights localpool mirroring nfs osd_perf_query " +
	"osd_support restful selftest snap_schedule stats telegraf test_orchestrator zabbix"

// monAddrs is the mon's address vector (msgr2 and legacy ports).
func (p Ports) monAddrs() string {
	return fmt.Sprintf("[v2:127.0.0.1:%d,v1:127.0.0.1:%d]", p.MonV2, p.MonV1)
}

// config is ceph.conf: everything Ceph keeps under /etc/ceph, /var/lib/ceph, /var/run/ceph and
// /var/log/ceph is inside the cluster's directory, and every port is the cluster's own. It is
// rewritten at every start, so a restart may change the ports (the mon is re-addressed).
func config(dir, fsid string, p Ports, o Options) string {
	modules := "iostat prometheus"
	if o.Dashboard {
		modules += " dashboard"
	}
	r := strings.NewReplacer(
		"@DIR@", dir, "@FSID@", fsid, "@MONHOST@", p.monAddrs(),
		"@PORTMIN@", fmt.Sprint(p.DaemonMin), "@PORTMAX@", fmt.Sprint(p.DaemonMax),
		"@RGW@", fmt.Sprint(p.RGW), "@MODULES@", modules, "@DISABLED@", disabledModules,
		"@MEMSTORE@", fmt.Sprint(o.MemstoreBytes), "@SERVE@", o.serveAddr(),
	)
	return r.Replace(confTemplate)
}

// serveAddr is where the dashboard, prometheus and radosgw listen (Options.ServeAddr).
func (o Options) serveAddr() string {
	if o.ServeAddr == "" {
		return "127.0.0.1"
	}
	return o.ServeAddr
}

// moduleOptions are the mgr modules' settings. The mgr reads module options only from the mon's
// config database, and the mon accepts them before any mgr has declared them only with
// `ceph config set … --force`, so they are set there before the mgr starts. The prometheus
// cache is off: every scrape shows the current state.
func moduleOptions(p Ports, o Options) [][2]string {
	return [][2]string{
		{"mgr/prometheus/server_addr", o.serveAddr()},
		{"mgr/prometheus/server_port", fmt.Sprint(p.Prometheus)},
		{"mgr/prometheus/cache", "false"},
		{"mgr/dashboard/ssl", "false"},
		{"mgr/dashboard/server_addr", o.serveAddr()},
		{"mgr/dashboard/server_port", fmt.Sprint(p.Dashboard)},
	}
}

// osd fast shutdown = false: on SIGTERM the OSD unmounts its store, and memstore writes its
// contents to the OSD's directory, which the next start reads back — data survives a clean
// stop (not a SIGKILL).
const confTemplate = `[global]
fsid = @FSID@
mon initial members = a
mon host = @MONHOST@
public network = 127.0.0.0/8
cluster network = 127.0.0.0/8
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind ipv4 = true
ms bind ipv6 = false
ms bind port min = @PORTMIN@
ms bind port max = @PORTMAX@
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
auth allow insecure global id reclaim = false
run dir = @DIR@/run
crash dir = @DIR@/crash
log file = @DIR@/log/$cluster-$name.log
mon cluster log file = @DIR@/log/$cluster.$channel.log
# one OSD, no replication: the cluster stays HEALTH_OK
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon data avail warn = 2
mon data avail crit = 1
# usage follows a write within ~2 s instead of ~10 s
mgr stats period = 1
osd mon report interval = 1

[client]
keyring = @DIR@/ceph.client.admin.keyring

[mon]
mon data = @DIR@/mon/$cluster-$id
mgr initial modules = @MODULES@

[mgr]
mgr data = @DIR@/mgr/$cluster-$id
keyring = @DIR@/mgr/$cluster-$id/keyring
mgr disabled modules = @DISABLED@

[osd]
osd data = @DIR@/osd/$cluster-$id
keyring = @DIR@/osd/$cluster-$id/keyring
osd objectstore = memstore
memstore device bytes = @MEMSTORE@
osd fast shutdown = false

[client.rgw.x]
rgw data = @DIR@/rgw/ceph-x
keyring = @DIR@/rgw/ceph-x/keyring
rgw frontends = beast endpoint=@SERVE@:@RGW@
`
