package cephlocal

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// TestRestartKeepsDataAndLeavesNothing starts a cluster with every option, writes an object
// through RADOS and one through S3, stops it, starts it again on other ports (the mon is
// re-addressed) and reads both back; after each stop no process uses the directory.
func TestRestartKeepsDataAndLeavesNothing(t *testing.T) {
	if err := LookBinaries(Options{Dashboard: true, RGW: true}); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := shortDir(t)
	o := Options{Dir: dir, Dashboard: true, RGW: true, MemstoreBytes: 256 << 20}
	c := start(t, ctx, o)
	if !c.Fresh() {
		t.Fatal("a new directory gave an existing cluster")
	}
	fsid := c.FSID()
	run(t, c, "ceph", "osd", "pool", "create", "kept", "8")
	run(t, c, "ceph", "osd", "pool", "application", "enable", "kept", "rados")
	payload := filepath.Join(t.TempDir(), "payload")
	if err := os.WriteFile(payload, []byte("survives a restart"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, c, "rados", "-p", "kept", "put", "obj", payload)
	keys, err := c.S3User(ctx, "tester")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(keys.String()+keys.GoString(), keys.SecretAccessKey) {
		t.Fatal("S3Credentials print their secret")
	}
	if err := c.CreateBucket(ctx, keys, "kept"); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateBucket(ctx, keys, "kept"); err != nil {
		t.Fatalf("creating an owned bucket again: %v", err)
	}
	s3(t, c, keys, http.MethodPut, "/kept/obj", []byte("s3 survives too"), http.StatusOK)
	bucketUsers(t, ctx, c)
	dashboardLogin(t, c)
	// Stop must be graceful: the OSD writes its memstore to disk.
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	noProcesses(t, dir)

	o.Ports = PortsAt(c.Ports().Base() + BlockSize)
	if o.Ports.Busy() != 0 {
		o.Ports = Ports{}
	}
	c2 := start(t, ctx, o)
	if c2.Fresh() || c2.FSID() != fsid {
		t.Fatalf("restart: fresh %v fsid %s, want the cluster %s again", c2.Fresh(), c2.FSID(), fsid)
	}
	if c2.Ports() == c.Ports() {
		t.Log("restarted on the same ports (the next block was busy)")
	}
	got := filepath.Join(t.TempDir(), "got")
	run(t, c2, "rados", "-p", "kept", "get", "obj", got)
	if data, _ := os.ReadFile(got); string(data) != "survives a restart" {
		t.Fatalf("RADOS object after restart: %q", data)
	}
	if body := s3(t, c2, keys, http.MethodGet, "/kept/obj", nil, http.StatusOK); string(body) != "s3 survives too" {
		t.Fatalf("S3 object after restart: %q", body)
	}
	again, err := c2.S3User(ctx, "tester")
	if err != nil || again != keys {
		t.Fatalf("S3User after restart: %v (same keys: %v)", err, again == keys)
	}
	dashboardLogin(t, c2)
	rss := c2.RSS()
	for _, name := range []string{"mon.a", "mgr.x", "osd.0", "client.rgw.x"} {
		if rss[name] <= 0 {
			t.Fatalf("RSS of %s: %d", name, rss[name])
		}
		t.Logf("RSS %s: %d MiB", name, rss[name]>>20)
	}
	c2.Kill()
	noProcesses(t, dir)
}

// TestMissingPackagesSayWhatToInstall: without the binaries Start starts nothing and names
// the packages.
func TestMissingPackagesSayWhatToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Start(context.Background(), Options{Dir: t.TempDir(), RGW: true})
	if err == nil || !strings.Contains(err.Error(), "apt-get install ceph-mon ceph-mgr ceph-osd ceph-common radosgw") {
		t.Fatalf("Start without Ceph: %v", err)
	}
}

func TestPortsLayout(t *testing.T) {
	p := PortsAt(7300)
	if p.MonV2 != 7300 || p.RGW != 7304 || p.DaemonMin != 7308 || p.DaemonMax != 7339 || p.validate() != nil {
		t.Fatalf("PortsAt(7300) = %+v", p)
	}
	if err := (Ports{MonV2: 7300}).validate(); err == nil {
		t.Fatal("hand-made Ports accepted")
	}
}

func start(t *testing.T, ctx context.Context, o Options) *Cluster {
	t.Helper()
	c, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.LogTails(20))
		}
		c.Kill()
	})
	st, err := c.Status(ctx)
	if err != nil || !st.Healthy() || st.FSID != c.FSID() {
		t.Fatalf("status %+v (%v), want healthy cluster %s", st, err, c.FSID())
	}
	t.Logf("cluster %s ready in %v (new: %v)", c.FSID(), c.StartupTime().Round(100*time.Millisecond), c.Fresh())
	return c
}

func run(t *testing.T, c *Cluster, program string, args ...string) string {
	t.Helper()
	out, err := c.Run(context.Background(), program, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func s3(t *testing.T, c *Cluster, k S3Credentials, method, path string, body []byte, want int) []byte {
	t.Helper()
	resp, err := c.s3Do(context.Background(), k, method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s %s", method, path, resp.Status, data)
	}
	return data
}

func dashboardLogin(t *testing.T, c *Cluster) {
	t.Helper()
	pw, err := c.DashboardPassword()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(c.DashboardPasswordFile()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("password file: %v %v", fi.Mode(), err)
	}
	body := `{"username":"` + DashboardUser + `","password":"` + pw + `"}`
	req, _ := http.NewRequest(http.MethodPost, c.DashboardURL()+"/api/auth", bytes.NewReader([]byte(body)))
	req.Header.Set("Accept", "application/vnd.ceph.api.v1.0+json")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("dashboard login: %s", resp.Status)
	}
}

// shortDir is a temp dir short enough for the daemons' admin sockets.
func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "ceph")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// noProcesses fails when a live process's command line mentions dir.
func noProcesses(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && runsConf(pid, dir) {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			t.Fatalf("process left running: %s: %s", e.Name(), bytes.ReplaceAll(cmdline, []byte{0}, []byte(" ")))
		}
	}
}

// bucketUsers: two services' users, each limited to its own new bucket (the second made
// while the first exists: radosgw-admin's words for a missing bucket then differ), cannot
// touch each other's; the user named in "also" can; a bucket of another owner is taken over
// with its objects; a second call changes nothing.
func bucketUsers(t *testing.T, ctx context.Context, c *Cluster) {
	t.Helper()
	a, err := c.BucketUser(ctx, "svc-a", "bucket-a", "tester")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.BucketUser(ctx, "svc-b", "bucket-b")
	if err != nil {
		t.Fatalf("a second service's bucket user: %v", err)
	}
	if again, err := c.BucketUser(ctx, "svc-b", "bucket-b"); err != nil || again != b {
		t.Fatalf("BucketUser again: %v (same keys: %v)", err, again == b)
	}
	s3(t, c, a, http.MethodPut, "/bucket-a/x", []byte("a"), http.StatusOK)
	s3(t, c, b, http.MethodPut, "/bucket-b/x", []byte("b"), http.StatusOK)
	s3(t, c, a, http.MethodGet, "/bucket-b/x", nil, http.StatusForbidden)
	s3(t, c, b, http.MethodPut, "/bucket-a/y", []byte("b"), http.StatusForbidden)
	s3(t, c, b, http.MethodPut, "/bucket-c", nil, http.StatusForbidden)
	tester, err := c.S3User(ctx, "tester")
	if err != nil {
		t.Fatal(err)
	}
	s3(t, c, tester, http.MethodGet, "/bucket-a/x", nil, http.StatusOK)
	s3(t, c, tester, http.MethodGet, "/bucket-b/x", nil, http.StatusForbidden)
	s3(t, c, tester, http.MethodPut, "/taken", nil, http.StatusOK)
	s3(t, c, tester, http.MethodPut, "/taken/old", []byte("kept"), http.StatusOK)
	taker, err := c.BucketUser(ctx, "svc-c", "taken")
	if err != nil {
		t.Fatalf("taking over a bucket: %v", err)
	}
	if body := s3(t, c, taker, http.MethodGet, "/taken/old", nil, http.StatusOK); string(body) != "kept" {
		t.Fatalf("an object of the bucket taken over: %q", body)
	}
	s3(t, c, tester, http.MethodGet, "/taken/old", nil, http.StatusForbidden)
}
