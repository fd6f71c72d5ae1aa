package launcher

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/cephlocal"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// TestDevS3UsersAreLimitedToTheirBuckets (issue #36, "the default keys own cnpgi's bucket
// too"), on a real dev Ceph (radosgw): make up's S3 set-up, run over a dev Ceph of before
// (one user owning both buckets, an archived WAL in plinth-cnpgi), gives lvmd-agent keys
// that cannot read or write cnpgi-plugin's bucket nor make a bucket, and cnpgi-plugin keys
// that cannot touch lvmd-agent's; each still reads and writes its own (the WAL kept), the
// operator's keys of s3.env both, and a second start changes nothing.
func TestDevS3UsersAreLimitedToTheirBuckets(t *testing.T) {
	o := cephlocal.Options{Dir: shortCephDir(t), Dashboard: true, RGW: true, MemstoreBytes: 256 << 20}
	if err := cephlocal.LookBinaries(o); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cl, err := cephlocal.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Kill)
	// The dev Ceph of before: user plinth owns both buckets.
	old, err := cl.S3User(ctx, cephS3User)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range cephBuckets {
		if err := cl.CreateBucket(ctx, old, b); err != nil {
			t.Fatal(err)
		}
	}
	s3 := func(k cephlocal.S3Credentials, method, path string, want int) {
		t.Helper()
		var body []byte
		if method == http.MethodPut {
			body = []byte("written by " + k.AccessKeyID)
		}
		resp, err := cl.S3Request(ctx, k, method, path, body)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode/100 != want/100 {
			t.Fatalf("%s %s with %s: %s %s, want %d", method, path, k, resp.Status, data, want)
		}
	}
	wal := "/plinth-cnpgi/pg-1/wals/000000010000000000000001"
	s3(old, http.MethodPut, wal, http.StatusOK)

	home := t.TempDir()
	for start := 1; start <= 2; start++ {
		d, err := describeDevCeph(ctx, home, cl)
		if err != nil {
			t.Fatalf("start %d: %v", start, err)
		}
		if err := writeHomeJSON(home, DevCephFile, d); err != nil {
			t.Fatal(err)
		}
		if err := writeCNPGIStores(home, d.S3); err != nil {
			t.Fatal(err)
		}
		lvmdEnv := withDevS3(func(Config, map[string]Placement) map[string]string { return nil })(Config{Home: home}, nil)
		lvmd := cephlocal.S3Credentials{AccessKeyID: readKey(t, lvmdEnv[envLvmdDefaultS3AccessKeyFile]), SecretAccessKey: readKey(t, lvmdEnv[envLvmdDefaultS3SecretKeyFile])}
		cnpgi := cnpgiStoreKeys(t, home)
		operator := cephlocal.S3Credentials{AccessKeyID: readKey(t, d.S3.AccessKeyFile), SecretAccessKey: readKey(t, d.S3.SecretKeyFile)}
		if lvmd.AccessKeyID == cnpgi.AccessKeyID || lvmd.AccessKeyID == operator.AccessKeyID || cnpgi.AccessKeyID == operator.AccessKeyID {
			t.Fatalf("start %d: lvmd-agent %s, cnpgi-plugin %s and the operator %s share keys", start, lvmd, cnpgi, operator)
		}
		s3(lvmd, http.MethodPut, "/plinth-cnpgi/pg-1/wals/forged", http.StatusForbidden)
		s3(lvmd, http.MethodGet, wal, http.StatusForbidden)
		s3(lvmd, http.MethodPut, "/plinth-lvmd-2", http.StatusForbidden)
		s3(lvmd, http.MethodPut, "/plinth-lvmd/backups/vol1/manifest.json", http.StatusOK)
		s3(cnpgi, http.MethodGet, "/plinth-lvmd/backups/vol1/manifest.json", http.StatusForbidden)
		s3(cnpgi, http.MethodPut, "/plinth-lvmd/backups/vol1/manifest.json", http.StatusForbidden)
		s3(cnpgi, http.MethodGet, wal, http.StatusOK)
		s3(cnpgi, http.MethodPut, "/plinth-cnpgi/pg-1/wals/000000010000000000000002", http.StatusOK)
		s3(operator, http.MethodGet, wal, http.StatusOK)
		s3(operator, http.MethodGet, "/plinth-lvmd/backups/vol1/manifest.json", http.StatusOK)
	}
}

// readKey reads a key file the launcher wrote (0600).
func readKey(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// cnpgiStoreKeys reads the keys the cnpgi-plugin's store configuration names by file.
func cnpgiStoreKeys(t *testing.T, home string) cephlocal.S3Credentials {
	t.Helper()
	conf, err := os.ReadFile(cnpgiStoreFile(home))
	if err != nil {
		t.Fatal(err)
	}
	file := func(field string) string {
		m := regexp.MustCompile(field + `: \{file: "([^"]+)"\}`).FindSubmatch(conf)
		if m == nil {
			t.Fatalf("no %s file in the cnpgi-plugin's stores:\n%s", field, conf)
		}
		return readKey(t, string(m[1]))
	}
	return cephlocal.S3Credentials{AccessKeyID: file("accessKeyId"), SecretAccessKey: file("secretAccessKey")}
}

// shortCephDir is a temp dir short enough for the daemons' unix socket paths.
func shortCephDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "ceph")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Clean(dir)
}
