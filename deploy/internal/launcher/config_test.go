package launcher

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.work"), []byte("go 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// envOf is an environment in os.Environ() form.
func envOf(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

func TestParseConfigDefaults(t *testing.T) {
	root := repoRoot(t)
	c, err := ParseConfig([]string{"-root", root}, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Home != filepath.Join(root, ".plinth") || c.PortOffset != 0 || c.DatabaseName != "plinth" || c.PrivatePostgres {
		t.Errorf("defaults = %+v", c)
	}
	if c.Terminal || c.Color {
		t.Error("io.Discard is not a terminal")
	}
	if c.LvmdVG != "plinth" || c.LvmdConfig != "" || c.KaasEtcd != "" {
		t.Errorf("defaults = %+v", c)
	}
}

// The launcher reads its environment once, here: the user's own settings of a binary, which
// keep the launcher's choice for it out, land in Config, and the whole environment is kept
// for the children.
func TestParseConfigReadsTheUsersOwnSettings(t *testing.T) {
	env := envOf(map[string]string{
		"PLINTH_LVMD_CONFIG": "/etc/topolvm/lvmd.yaml", "PLINTH_LVMD_DEFAULT_S3_ENDPOINT": "http://s3:9000",
		"PLINTH_CNPGI_CONFIG": "/mine.yaml", "PLINTH_STATS_CEPH_URL": "http://mgr:8080",
		"PLINTH_KAAS_VAGRANT_ETCD": "/opt/etcd", "PLINTH_LVMD_VG": "vgtest", "UNRELATED": "x",
	})
	c, err := ParseConfig([]string{"-root", repoRoot(t)}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.LvmdConfig != "/etc/topolvm/lvmd.yaml" || c.LvmdDefaultS3Endpoint != "http://s3:9000" || c.CNPGIConfig != "/mine.yaml" ||
		c.StatsCephURL != "http://mgr:8080" || c.KaasEtcd != "/opt/etcd" || c.LvmdVG != "vgtest" || len(c.Environ) != len(env) {
		t.Errorf("config = %+v", c)
	}
	if c, err := ParseConfig([]string{"-root", repoRoot(t), "-lvmd-vg", "vgflag"}, env, io.Discard); err != nil || c.LvmdVG != "vgflag" {
		t.Errorf("-lvmd-vg: %q %v", c.LvmdVG, err)
	}
}

func TestParseConfigFlagsWinOverEnv(t *testing.T) {
	root := repoRoot(t)
	env := envOf(map[string]string{
		"PLINTH_HOME": "/env/home", "PLINTH_PORT_OFFSET": "100", "PLINTH_NATS_URL": "nats://env:1",
		"PLINTH_DATABASE_NAME": "from_env", "PLINTH_PRIVATE_POSTGRES": "1",
	})
	c, err := ParseConfig([]string{"-root", root, "-port-offset", "200", "-home", "/flag/home"}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.PortOffset != 200 || c.Home != "/flag/home" {
		t.Errorf("flags lost: offset %d home %s", c.PortOffset, c.Home)
	}
	if c.NATSURL != "nats://env:1" || c.DatabaseName != "from_env" || !c.PrivatePostgres {
		t.Errorf("env lost: %+v", c)
	}
}

func TestParseConfigFindsRootAboveWorkingDirectory(t *testing.T) {
	root := repoRoot(t)
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	c, err := ParseConfig(nil, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Root != root {
		t.Errorf("root = %s, want %s", c.Root, root)
	}
}

func TestParseConfigRejects(t *testing.T) {
	root := repoRoot(t)
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"bad offset env", []string{"-root", root}, map[string]string{"PLINTH_PORT_OFFSET": "x"}, "PLINTH_PORT_OFFSET"},
		{"negative offset", []string{"-root", root, "-port-offset", "-1"}, nil, "port offset"},
		{"huge offset", []string{"-root", root, "-port-offset", "60000"}, nil, "port offset"},
		{"not a repository", []string{"-root", t.TempDir()}, nil, "go.work"},
		{"database name", []string{"-root", root, "-database-name", "Robert'); DROP"}, nil, "database name"},
		{"leading digit", []string{"-root", root, "-database-name", "1db"}, nil, "database name"},
		// The services' role is named like the database: "postgres" would demote the superuser.
		{"server's own database", []string{"-root", root, "-database-name", "postgres"}, nil, "server's own"},
		{"arguments", []string{"-root", root, "extra"}, nil, "unexpected arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig(tc.args, envOf(tc.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
