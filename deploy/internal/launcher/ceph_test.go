package launcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDevCephWanted(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		euid int
		want bool
		why  string
	}{
		{"root", Config{}, 0, true, ""},
		{"-no-ceph", Config{NoCeph: true}, 0, false, "-no-ceph"},
		{"user's cluster", Config{StatsCephURL: "http://mgr:8080"}, 0, false, "PLINTH_STATS_CEPH_URL"},
		{"not root", Config{}, 1000, false, "not root"},
	} {
		got, why := devCephWanted(tc.c, tc.euid)
		if got != tc.want || !strings.Contains(why, tc.why) {
			t.Errorf("%s: %v %q, want %v and a reason naming %q", tc.name, got, why, tc.want, tc.why)
		}
	}
}

// TestDevCephEnv: stats and cnpgi-plugin are pointed at the dev Ceph only while HOME/ceph.json
// says it runs, with secrets by file only; a user's own cnpgi configuration wins.
func TestDevCephEnv(t *testing.T) {
	home := t.TempDir()
	placed := map[string]Placement{"auth": {GRPC: "127.0.0.1:7001"}}
	if env := statsEnv(Config{Home: home}, placed); len(env) != 1 || env["PLINTH_AUTH_ADDR"] != "127.0.0.1:7001" {
		t.Fatalf("stats without a dev Ceph: %v", env)
	}
	if _, ok := cnpgiEnv(Config{Home: home}, placed)["PLINTH_CNPGI_CONFIG"]; ok {
		t.Fatal("cnpgi-plugin gets a store file without a dev Ceph")
	}
	if env := withDevS3(func(Config, map[string]Placement) map[string]string { return nil })(Config{Home: home}, placed); env != nil {
		t.Fatalf("lvmd-agent gets a default S3 store without a dev Ceph: %v", env)
	}
	s3 := devS3{Endpoint: "http://127.0.0.1:7304", Region: "us-east-1", Buckets: cephBuckets,
		AccessKeyFile: "/h/ceph/s3/access_key_id", SecretKeyFile: "/h/ceph/s3/secret_access_key",
		Services: map[string]devS3User{
			"lvmd-agent":   {Bucket: "plinth-lvmd", AccessKeyFile: "/h/ceph/s3/plinth-lvmd/access_key_id", SecretKeyFile: "/h/ceph/s3/plinth-lvmd/secret_access_key"},
			"cnpgi-plugin": {Bucket: "plinth-cnpgi", AccessKeyFile: "/h/ceph/s3/plinth-cnpgi/access_key_id", SecretKeyFile: "/h/ceph/s3/plinth-cnpgi/secret_access_key"},
		}}
	d := devCeph{DashboardURL: "http://127.0.0.1:7303", DashboardUser: "plinth", DashboardPasswordFile: "/h/ceph/dashboard.pw", S3: s3}
	if err := writeHomeJSON(home, DevCephFile, d); err != nil {
		t.Fatal(err)
	}
	env := statsEnv(Config{Home: home}, placed)
	if env["PLINTH_STATS_CEPH_URL"] != d.DashboardURL || env["PLINTH_STATS_CEPH_USER"] != "plinth" ||
		env["PLINTH_STATS_CEPH_PASSWORD_FILE"] != d.DashboardPasswordFile || env["PLINTH_STATS_CEPH_PASSWORD"] != "" {
		t.Fatalf("stats with a dev Ceph: %v", env)
	}
	lvmd := withDevS3(func(Config, map[string]Placement) map[string]string { return nil })(Config{Home: home}, placed)
	// lvmd-agent's own user's keys, never the operator's (issue #36).
	if lvmd["PLINTH_LVMD_DEFAULT_S3_ENDPOINT"] != s3.Endpoint || lvmd["PLINTH_LVMD_DEFAULT_S3_SECRET_ACCESS_KEY_FILE"] != "/h/ceph/s3/plinth-lvmd/secret_access_key" ||
		lvmd["PLINTH_LVMD_DEFAULT_S3_ACCESS_KEY_ID_FILE"] != "/h/ceph/s3/plinth-lvmd/access_key_id" {
		t.Fatalf("lvmd-agent with a dev Ceph: %v", lvmd)
	}
	if got := cnpgiEnv(Config{Home: home}, placed)["PLINTH_CNPGI_CONFIG"]; got != cnpgiStoreFile(home) {
		t.Fatalf("cnpgi-plugin config %q", got)
	}
	if _, ok := cnpgiEnv(Config{Home: home, CNPGIConfig: "/mine.yaml"}, placed)["PLINTH_CNPGI_CONFIG"]; ok {
		t.Fatal("the user's PLINTH_CNPGI_CONFIG is replaced")
	}

	if err := writeCNPGIStores(home, s3); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(cnpgiStoreFile(home))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("store file: %v %v", fi, err)
	}
	data, _ := os.ReadFile(cnpgiStoreFile(home))
	for _, want := range []string{"defaultStore: ceph", `endpoint: "http://127.0.0.1:7304"`, `bucket: "plinth-cnpgi"`,
		`accessKeyId: {file: "/h/ceph/s3/plinth-cnpgi/access_key_id"}`, `secretAccessKey: {file: "/h/ceph/s3/plinth-cnpgi/secret_access_key"}`, `path: "` + filepath.Join(home, "cnpgi-store") + `"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("store file lacks %s:\n%s", want, data)
		}
	}
}

func TestCephNeedsOnlyWhenWanted(t *testing.T) {
	if os.Geteuid() == 0 {
		if n := cephNeeds(Config{NoCeph: true}); n != nil {
			t.Fatalf("-no-ceph still needs %v", n)
		}
		n := cephNeeds(Config{})
		var pkgs []string
		for _, need := range n {
			if need.Without == "" {
				t.Fatalf("stats cannot run without %s?", need.Command)
			}
			pkgs = append(pkgs, need.Package)
		}
		if strings.Join(pkgs, " ") != "ceph-mon ceph-mgr ceph-osd ceph-common radosgw ceph-mgr-dashboard" {
			t.Fatalf("needs as root: one per package, got %v", n)
		}
		return
	}
	if n := cephNeeds(Config{}); n != nil {
		t.Fatalf("not root still needs %v", n)
	}
}

// TestStatsRunsWithoutCephPackages: as root without the Ceph packages and without installing,
// stats is neither skipped nor an error; the launcher says what to install, once per package.
func TestStatsRunsWithoutCephPackages(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("stats needs the Ceph packages only as root (not root: no dev Ceph, nothing to check)")
	}
	var stats Spec
	for _, s := range Table() {
		if s.Binary == "stats" {
			stats = s
		}
	}
	m := machine{look: func(cmd string) (string, error) { return "", os.ErrNotExist }, noInstall: "-no-install"}
	var out strings.Builder
	say := func(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }
	skip, err := settleNeeds(context.Background(), unmetNeeds([]Spec{stats}, Config{}, m), m, say)
	if err != nil || skip["stats"] != nil {
		t.Fatalf("stats without Ceph: skip %v, err %v", skip, err)
	}
	if got := strings.Count(out.String(), "stats needs "); got != 6 || !strings.Contains(out.String(), "stats runs without ceph-mon") || !strings.Contains(out.String(), "apt-get install ceph-mon ceph-mgr ceph-osd ceph-common radosgw ceph-mgr-dashboard") {
		t.Fatalf("what the launcher says:\n%s", out.String())
	}
}
