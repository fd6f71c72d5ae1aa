package launcher

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plinth-dev/plinth/libs/platform/cephlocal"

	"github.com/plinth-dev/plinth/libs/platform/atomicfile"
)

// The dev Ceph make up runs for stats and as the default S3 store (cnpgi-plugin, lvmd-agent
// backups): mon, mgr with the dashboard and prometheus modules, one memstore OSD and a
// radosgw, all under HOME/ceph and kept across runs like the volume group.
const (
	// cephBasePort is the first of the dev Ceph's cephlocal.BlockSize ports (7300-7339:
	// mon 7300/7301, prometheus 7302, dashboard 7303, radosgw 7304, daemons 7308-7339),
	// shifted by the port offset.
	cephBasePort = 7300
	// cephMemstoreBytes caps what the OSD stores in RAM: its memory grows with what it stores
	// (+110 MB for one 100 MB object, measured; up to ~2.5× for many small objects), so a full
	// store costs ~0.6–1.3 GB on top of ~55 MB idle.
	cephMemstoreBytes = 512 << 20
	// cephS3User is the operator's S3 user (the keys of s3.env): granted both buckets by their
	// policies, given to no service.
	cephS3User = "plinth"
	// DevCephFile is where, inside the runtime home, a launcher that started the dev Ceph says
	// what it serves (devCeph, no secrets: they stay in 0600 files it names); removed when the
	// dev Ceph stops and at the start of every run.
	DevCephFile = "ceph.json"
	// S3EnvFile holds the dev S3's endpoint and keys as shell variables (0600), for lvmd-agent
	// backups and any S3 client: set -a; . .plinth/s3.env; set +a.
	S3EnvFile = "s3.env"
)

// cephBuckets are created at every start (idempotent): the cnpgi-plugin's WAL and base
// backups, and lvmd-agent's volume backups.
var cephBuckets = []string{cephServiceUsers["cnpgi-plugin"], cephServiceUsers["lvmd-agent"]}

// cephServiceUsers are the services' own radosgw users, each named after the one bucket it
// owns and may use (cephlocal.BucketUser): lvmd-agent's default keys, which any operator's
// backup request may use, cannot read or write the WAL archive, nor the plugin's keys the
// volume backups (issue #36).
var cephServiceUsers = map[string]string{"cnpgi-plugin": "plinth-cnpgi", "lvmd-agent": "plinth-lvmd"}

// devCeph is HOME/ceph.json.
type devCeph struct {
	Dir           string `json:"dir"`
	FSID          string `json:"fsid"`
	DashboardURL  string `json:"dashboard_url"`
	DashboardUser string `json:"dashboard_user"`
	// DashboardPasswordFile holds the dashboard password (0600).
	DashboardPasswordFile string `json:"dashboard_password_file"`
	PrometheusURL         string `json:"prometheus_url"`
	S3                    devS3  `json:"s3"`
}

// devS3 is the radosgw as an S3 store.
type devS3 struct {
	Endpoint string   `json:"endpoint"`
	Region   string   `json:"region"`
	Buckets  []string `json:"buckets"`
	// AccessKeyFile and SecretKeyFile hold the user's keys (0600 each); EnvFile both as
	// AWS_* variables.
	AccessKeyFile string `json:"access_key_id_file"`
	SecretKeyFile string `json:"secret_access_key_file"`
	EnvFile       string `json:"env_file"`
	// Services are the keys of each service's own user (by binary name), limited to its bucket.
	Services map[string]devS3User `json:"services"`
}

// devS3User is one service's radosgw user: its bucket and the files of its keys (0600 each).
type devS3User struct {
	Bucket        string `json:"bucket"`
	AccessKeyFile string `json:"access_key_id_file"`
	SecretKeyFile string `json:"secret_access_key_file"`
}

// cephOptions are the dev Ceph's: every module and the radosgw, a bounded memstore.
func cephOptions(c Config, log *slog.Logger) cephlocal.Options {
	return cephlocal.Options{Dir: filepath.Join(c.Home, "ceph"), Ports: cephlocal.PortsAt(cephBasePort + c.PortOffset),
		Dashboard: true, RGW: true, MemstoreBytes: cephMemstoreBytes, Logger: log}
}

// devCephWanted says whether this run starts the dev Ceph, or why not.
func devCephWanted(c Config, euid int) (bool, string) {
	switch {
	case c.NoCeph:
		return false, "-no-ceph (PLINTH_NO_CEPH=1)"
	case c.StatsCephURL != "":
		return false, "PLINTH_STATS_CEPH_URL is set: stats reads that cluster"
	case euid != 0:
		return false, "not root (the daemons and the memstore want root; run make up as root for it)"
	}
	return true, ""
}

// cephNeeds are stats's needs when the dev Ceph is wanted: one command of each package the
// dev Ceph needs (daemons, client tools, dashboard module, radosgw), so a missing package is
// one line. Stats runs without them, on the suite's inventory only; startDevCeph checks every
// command again before it starts anything.
func cephNeeds(c Config) []Need {
	if ok, _ := devCephWanted(c, os.Geteuid()); !ok {
		return nil
	}
	var needs []Need
	for _, cmd := range cephlocal.Commands(cephOptions(c, nil)) {
		if slices.ContainsFunc(needs, func(n Need) bool { return n.Package == cmd.Package }) {
			continue
		}
		needs = append(needs, Need{Command: cmd.Name, Package: cmd.Package, Why: "dev Ceph",
			Without: "no dev Ceph: stats shows the suite's inventory only and backups have no default S3"})
	}
	return needs
}

// startDevCeph starts (or starts again) the dev Ceph when stats is among the binaries and it is
// wanted, makes the S3 user and buckets, writes HOME/ceph.json, HOME/s3.env and the cnpgi-plugin
// store configuration, and has close stop it gracefully after the services. Without it, it
// says why in one line and the run goes on as before.
func (s *session) startDevCeph(ctx context.Context, c Config) error {
	_ = os.Remove(filepath.Join(c.Home, DevCephFile))
	if !slices.ContainsFunc(s.found, func(b Binary) bool { return b.Name == "stats" }) {
		return nil
	}
	if ok, why := devCephWanted(c, os.Geteuid()); !ok {
		s.self("dev Ceph: not started: %s", why)
		return nil
	}
	o := cephOptions(c, textLogger(s.con.Writer("ceph"), slog.LevelInfo))
	if err := cephlocal.LookBinaries(o); err != nil {
		s.self("dev Ceph: not started: %v", err)
		return nil
	}
	cl, err := cephlocal.Start(ctx, o)
	if err != nil {
		return fmt.Errorf("dev Ceph in %s: %w (its logs are in %s; -no-ceph runs without it)", o.Dir, err, filepath.Join(o.Dir, "log"))
	}
	s.onClose(func() error {
		_ = os.Remove(filepath.Join(c.Home, DevCephFile))
		err := cl.Stop()
		s.self("dev Ceph stopped (kept in %s)", cl.Dir())
		return err
	})
	d, err := describeDevCeph(ctx, c.Home, cl)
	if err != nil {
		return err
	}
	if err := writeCNPGIStores(c.Home, d.S3); err != nil {
		return err
	}
	if err := writeHomeJSON(c.Home, DevCephFile, d); err != nil {
		return err
	}
	kind := "started again"
	if cl.Fresh() {
		kind = "new cluster"
	}
	s.self("dev Ceph: ready in %v (%s, %s): dashboard %s, prometheus %s, S3 %s (buckets %s; keys in %s); memstore %d MiB; RSS %s",
		cl.StartupTime().Round(100e6), kind, cl.Dir(), d.DashboardURL, d.PrometheusURL, d.S3.Endpoint,
		strings.Join(d.S3.Buckets, ", "), d.S3.EnvFile, cephMemstoreBytes>>20, rssLine(cl.RSS()))
	return nil
}

// describeDevCeph makes the S3 users and buckets and writes the key files: the operator's
// (s3.env) and one user per service, owning its bucket alone (cephServiceUsers).
func describeDevCeph(ctx context.Context, home string, cl *cephlocal.Cluster) (devCeph, error) {
	keys, err := cl.S3User(ctx, cephS3User)
	if err != nil {
		return devCeph{}, fmt.Errorf("dev Ceph S3 user: %w", err)
	}
	keyDir := filepath.Join(cl.Dir(), "s3")
	d := devCeph{Dir: cl.Dir(), FSID: cl.FSID(), DashboardURL: cl.DashboardURL(), DashboardUser: cephlocal.DashboardUser,
		DashboardPasswordFile: cl.DashboardPasswordFile(), PrometheusURL: cl.PrometheusURL(),
		S3: devS3{Endpoint: cl.RGWURL(), Region: "us-east-1", Buckets: cephBuckets,
			AccessKeyFile: filepath.Join(keyDir, "access_key_id"), SecretKeyFile: filepath.Join(keyDir, "secret_access_key"),
			EnvFile: filepath.Join(home, S3EnvFile), Services: map[string]devS3User{}}}
	env := fmt.Sprintf("# make up's dev S3 (radosgw of %s, user %s, granted every bucket): set -a; . %s; set +a\n"+
		"AWS_ENDPOINT_URL=%s\nAWS_REGION=%s\nAWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\nPLINTH_S3_BUCKETS=%q\n",
		cl.Dir(), cephS3User, d.S3.EnvFile, d.S3.Endpoint, d.S3.Region, keys.AccessKeyID, keys.SecretAccessKey, strings.Join(cephBuckets, " "))
	files := map[string]string{d.S3.AccessKeyFile: keys.AccessKeyID, d.S3.SecretKeyFile: keys.SecretAccessKey, d.S3.EnvFile: env}
	for service, uid := range cephServiceUsers {
		k, err := cl.BucketUser(ctx, uid, uid, cephS3User)
		if err != nil {
			return devCeph{}, fmt.Errorf("dev Ceph S3 user of %s: %w", service, err)
		}
		u := devS3User{Bucket: uid, AccessKeyFile: filepath.Join(keyDir, uid, "access_key_id"), SecretKeyFile: filepath.Join(keyDir, uid, "secret_access_key")}
		d.S3.Services[service] = u
		files[u.AccessKeyFile], files[u.SecretKeyFile] = k.AccessKeyID, k.SecretAccessKey
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return devCeph{}, err
		}
		if err := atomicfile.WritePrivate(path, []byte(content)); err != nil {
			return devCeph{}, err
		}
	}
	return d, nil
}

// readDevCeph reads HOME/ceph.json; false when this run has no dev Ceph.
func readDevCeph(home string) (devCeph, bool) {
	data, err := os.ReadFile(filepath.Join(home, DevCephFile))
	if err != nil {
		return devCeph{}, false
	}
	var d devCeph
	if err := json.Unmarshal(data, &d); err != nil || d.DashboardURL == "" {
		return devCeph{}, false
	}
	return d, true
}

// statsEnv points stats at auth and, when the dev Ceph runs, at its dashboard (the password by
// file: never in the environment).
func statsEnv(c Config, placed map[string]Placement) map[string]string {
	env := map[string]string{envAuthAddr: placed["auth"].GRPC}
	if d, ok := readDevCeph(c.Home); ok {
		env[envStatsCephURL] = d.DashboardURL
		env[envStatsCephUser] = d.DashboardUser
		env[envStatsCephPasswordFile] = d.DashboardPasswordFile
	}
	return env
}

// withDevS3 adds to lvmd-agent's environment, while the dev Ceph runs and the user set no
// default of their own, the agent's default S3 store: the radosgw with the keys (by file) of
// the agent's own user, limited to bucket plinth-lvmd. Backup and restore requests that name
// nothing but a path go there.
func withDevS3(env func(Config, map[string]Placement) map[string]string) func(Config, map[string]Placement) map[string]string {
	return func(c Config, placed map[string]Placement) map[string]string {
		out := env(c, placed)
		d, ok := readDevCeph(c.Home)
		u, mine := d.S3.Services["lvmd-agent"]
		if !ok || !mine || c.LvmdDefaultS3Endpoint != "" {
			return out
		}
		if out == nil {
			out = map[string]string{}
		}
		out[envLvmdDefaultS3Endpoint] = d.S3.Endpoint
		out[envLvmdDefaultS3AccessKeyFile] = u.AccessKeyFile
		out[envLvmdDefaultS3SecretKeyFile] = u.SecretKeyFile
		return out
	}
}

// rssLine is "mon.a 42 MB, mgr.x 228 MB, …" in stop order's reverse (start order).
func rssLine(rss map[string]int64) string {
	var parts []string
	var total int64
	for _, name := range []string{"mon.a", "mgr.x", "osd.0", "client.rgw.x"} {
		if v, ok := rss[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %d MB", name, v/1e6))
			total += v
		}
	}
	return strings.Join(parts, ", ") + fmt.Sprintf(" (%d MB in all)", total/1e6)
}
