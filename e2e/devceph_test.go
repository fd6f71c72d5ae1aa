package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/libs/platform/cephlocal"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// TestDevCephUnderMakeUp: as root with Debian's Ceph packages, make up starts its dev Ceph and
// stats reports it through the gateway (HEALTH_OK, the OSD up, the cluster's fsid); the keys
// in HOME/s3.env open the dev S3's bucket on the radosgw; after Ctrl-C no Ceph daemon is left,
// and a second make up on the same home finds the same cluster with the object written before.
// Between the two, every service serves and every console page's API answers with real data
// (journeyConsolePages).
func TestDevCephUnderMakeUp(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		skipOrFail(t, "make up starts its dev Ceph only as root")
	}
	if err := cephlocal.LookBinaries(cephlocal.Options{Dashboard: true, RGW: true}); err != nil {
		skipOrFail(t, "%v", err)
	}
	root := repoRoot(t)
	bin := buildLauncher(t, root)
	home := newHome(t)
	password := randomHex(t, 12)
	dbName := "plinth_e2e_devceph_" + randomHex(t, 4)
	offset := freeOffset(t, bandDevCeph)
	env := []string{"PLINTH_NO_CEPH=0", "PLINTH_DATABASE_NAME=" + dbName, "PLINTH_ADMIN_PASSWORD=" + password, ownDevVG(t, home),
		"PLINTH_CNPGI_WAL_EVENT_INTERVAL=500ms"}
	s := &journeySuite{home: home, password: password}
	if s.pgdata, s.pgdataErr = initPGData(t, filepath.Join(home, "pgdata")); s.pgdataErr == nil {
		env = append(env, "PLINTH_CNPGI_PGDATA="+s.pgdata)
	}

	l := startLauncher(t, bin, root, home, offset, env...)
	e := l.waitEndpoints(t, readyTimeout)
	t.Cleanup(func() { dropDatabase(t, e.Database, dbName) })
	dev, ok := readDevCeph(t, home)
	if !ok {
		t.Fatalf("no HOME/ceph.json: the dev Ceph did not start\nlauncher output:\n%s", l.log.String())
	}
	if !strings.Contains(l.log.String(), "dev Ceph: ready in") || !strings.Contains(l.log.String(), "osd.0 ") {
		t.Errorf("the launcher does not report the dev Ceph with its daemons' memory")
	}
	statsReportsCluster(t, e.Gateway, password, dev.FSID)
	s.endpoints = e
	conn, err := grpc.NewClient(e.Gateway, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	s.gw = conn
	t.Run("CNPGIArchiveToDevS3", s.journeyCNPGIArchive)
	t.Run("ConsolePages", s.journeyConsolePages)
	t.Run("StorageInBrowser", func(t *testing.T) { storageInBrowser(t, root, e.Gateway, password, dev.FSID) })
	_ = conn.Close()

	store := devS3(t, dev.S3.Endpoint, dev.S3.EnvFile, "plinth-lvmd")
	want := []byte("written before the stop " + randomHex(t, 8))
	if err := store.Put(callCtx(t), "e2e/kept", bytes.NewReader(want), objectstore.PutOptions{Size: int64(len(want))}); err != nil {
		t.Fatalf("put into the dev S3 with the keys of s3.env: %v", err)
	}
	l.interrupt(t, stopTimeout)
	if left := processesUsing(t, filepath.Join(home, "ceph")); len(left) > 0 {
		t.Fatalf("Ceph daemons left after Ctrl-C: %v", left)
	}

	l = startLauncher(t, bin, root, home, offset, env...)
	e = l.waitEndpoints(t, readyTimeout)
	t.Cleanup(func() { l.interrupt(t, stopTimeout) })
	if !strings.Contains(l.log.String(), "started again") {
		t.Errorf("the second make up did not reuse the dev Ceph")
	}
	statsReportsCluster(t, e.Gateway, password, dev.FSID)
	r, _, err := devS3(t, dev.S3.Endpoint, dev.S3.EnvFile, "plinth-lvmd").Get(callCtx(t), "e2e/kept")
	if err != nil {
		t.Fatalf("the object written before the restart: %v", err)
	}
	got, _ := io.ReadAll(r)
	_ = r.Close()
	if !bytes.Equal(got, want) {
		t.Fatalf("after the restart the object holds %q, want %q", got, want)
	}
}

// devCeph is what HOME/ceph.json says about the launcher's dev Ceph.
type devCeph struct {
	FSID string `json:"fsid"`
	S3   struct {
		Endpoint string   `json:"endpoint"`
		Buckets  []string `json:"buckets"`
		EnvFile  string   `json:"env_file"`
	} `json:"s3"`
}

// readDevCeph reads HOME/ceph.json; false when the suite runs no dev Ceph.
func readDevCeph(t *testing.T, home string) (devCeph, bool) {
	t.Helper()
	var d devCeph
	data, err := os.ReadFile(filepath.Join(home, "ceph.json"))
	if err != nil {
		return d, false
	}
	if err := json.Unmarshal(data, &d); err != nil || d.FSID == "" {
		t.Fatalf("HOME/ceph.json: %v %s", err, data)
	}
	return d, true
}

// statsReportsCluster waits until stats, through the gateway, reports the dev Ceph healthy.
func statsReportsCluster(t *testing.T, gateway, password, fsid string) {
	t.Helper()
	conn, err := grpc.NewClient(gateway, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	token := (&journeySuite{gw: conn, password: password}).login(t)
	stats := statspb.NewStatsServiceClient(conn)
	err = eventually(90*time.Second, time.Second, func() error {
		resp, err := stats.GetClusterStats(withToken(callCtx(t), token), &statspb.GetClusterStatsRequest{})
		if err != nil {
			return err
		}
		st := resp.GetStats()
		osd := st.GetServices().GetOsd()
		if st.GetId() != fsid || st.GetStatus() != "HEALTH_OK" || osd.GetOsdCount() < 1 || osd.GetOsdUp() < 1 {
			return fmt.Errorf("id %q status %q OSDs %d up %d", st.GetId(), st.GetStatus(), osd.GetOsdCount(), osd.GetOsdUp())
		}
		return nil
	})
	if err != nil {
		t.Fatalf("stats never reported the dev Ceph %s as HEALTH_OK with an OSD up: %v", fsid, err)
	}
}

// devS3 opens bucket on the dev S3 with the keys of the launcher's s3.env.
func devS3(t *testing.T, endpoint, envFile, bucket string) *objectstore.S3 {
	t.Helper()
	f, err := os.Open(envFile)
	if err != nil {
		t.Fatalf("s3.env: %v", err)
	}
	defer f.Close()
	if fi, _ := f.Stat(); fi.Mode().Perm() != 0o600 {
		t.Errorf("s3.env has mode %v, want 0600", fi.Mode().Perm())
	}
	vars := map[string]string{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			vars[k] = v
		}
	}
	if vars["AWS_ENDPOINT_URL"] != endpoint {
		t.Errorf("s3.env names endpoint %q, ceph.json %q", vars["AWS_ENDPOINT_URL"], endpoint)
	}
	s, err := objectstore.NewS3(objectstore.S3Options{Endpoint: endpoint, Bucket: bucket, Region: vars["AWS_REGION"], PathStyle: true,
		AccessKeyID: vars["AWS_ACCESS_KEY_ID"], SecretAccessKey: vars["AWS_SECRET_ACCESS_KEY"]})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storageInBrowser runs console/e2e/storage-ceph.mjs against the suite: the Storage page with
// the dev Ceph (its fsid, HEALTH_OK, pools, OSD, radar numbers) and a volume backed up to
// lvmd-agent's default store from the volume's page. Screenshots go to
// console/test-output/storage-ceph.
func storageInBrowser(t *testing.T, root, gateway, password, fsid string) {
	node, consoleDir := browserTools(t, root)
	out := filepath.Join(consoleDir, "test-output", "storage-ceph")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(consoleDir, "e2e", "storage-ceph.mjs"))
	cmd.Dir = consoleDir
	cmd.Env = append(os.Environ(), "CONSOLE_URL=http://"+gateway, "PLINTH_PASSWORD="+password, "CEPH_FSID="+fsid,
		"OUT_DIR="+out, "CHROMIUM="+chromiumPath)
	result, err := cmd.CombinedOutput()
	t.Logf("storage with Ceph in the browser:\n%s", result)
	if err != nil {
		t.Fatalf("storage-ceph.mjs failed (%v); screenshots in %s", err, out)
	}
}
