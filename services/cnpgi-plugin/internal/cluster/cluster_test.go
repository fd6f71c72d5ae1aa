package cluster_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

const plugin = "cnpgi.plinth.dev"

func TestTargets(t *testing.T) {
	cases := []struct {
		name, json       string
		archive, restore cluster.Target
		err              string // substring of the archive error, "" for none
	}{
		{
			name:    "defaults",
			json:    `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"other"},{"name":"cnpgi.plinth.dev"}]}}`,
			archive: cluster.Target{ServerName: "pg"}, restore: cluster.Target{ServerName: "pg"},
		},
		{
			name:    "parameters",
			json:    `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"cnpgi.plinth.dev","parameters":{"objectStore":"s3","serverName":"pg-2024"}}]}}`,
			archive: cluster.Target{ObjectStore: "s3", ServerName: "pg-2024"}, restore: cluster.Target{ObjectStore: "s3", ServerName: "pg-2024"},
		},
		{
			name: "recovery from an external cluster while bootstrapping",
			json: `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"cnpgi.plinth.dev"}],
				"bootstrap":{"recovery":{"source":"origin"}},
				"externalClusters":[{"name":"origin","plugin":{"name":"cnpgi.plinth.dev","parameters":{"objectStore":"old"}}}]}}`,
			archive: cluster.Target{ServerName: "pg"}, restore: cluster.Target{ObjectStore: "old", ServerName: "origin"},
		},
		{
			name: "recovered cluster with a primary restores its own WAL",
			json: `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"cnpgi.plinth.dev"}],
				"bootstrap":{"recovery":{"source":"origin"}},
				"externalClusters":[{"name":"origin","plugin":{"name":"cnpgi.plinth.dev"}}]},"status":{"currentPrimary":"pg-1"}}`,
			archive: cluster.Target{ServerName: "pg"}, restore: cluster.Target{ServerName: "pg"},
		},
		{name: "not listed", json: `{"metadata":{"name":"pg"},"spec":{}}`, err: "lists no cnpgi.plinth.dev"},
		{name: "disabled", json: `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"cnpgi.plinth.dev","enabled":false}]}}`, err: "disabled"},
		{
			name: "unknown parameter",
			json: `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"cnpgi.plinth.dev","parameters":{"barmanObjectStore":"x"}}]}}`,
			err:  "spec.plugins[0].parameters.barmanObjectStore: unknown parameter",
		},
		{
			name:    "barman-cloud's parameters",
			json:    `{"metadata":{"name":"pg","namespace":"team-a"},"spec":{"plugins":[{"name":"cnpgi.plinth.dev","parameters":{"barmanObjectName":"minio-store","serverName":"pg-old"}}]}}`,
			archive: cluster.Target{BarmanObject: "minio-store", Namespace: "team-a", ServerName: "pg-old"},
			restore: cluster.Target{BarmanObject: "minio-store", Namespace: "team-a", ServerName: "pg-old"},
		},
		{
			name: "an ObjectStore and a configured store at once",
			json: `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"cnpgi.plinth.dev","parameters":{"barmanObjectName":"minio-store","objectStore":"s3"}}]}}`,
			err:  "spec.plugins[0].parameters.barmanObjectName: set either barmanObjectName",
		},
		{
			name: "an ObjectStore in another namespace",
			json: `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"cnpgi.plinth.dev","parameters":{"barmanObjectName":"other-ns/store"}}]}}`,
			err:  "spec.plugins[0].parameters.barmanObjectName: must be the name of an ObjectStore in the Cluster's namespace",
		},
		{
			name: "unsafe server name",
			json: `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"cnpgi.plinth.dev","parameters":{"serverName":"../x"}}]}}`,
			err:  "spec.plugins[0].parameters.serverName",
		},
	}
	for _, c := range cases {
		cl, err := cluster.Parse([]byte(c.json))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := cl.ArchiveTarget(plugin)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want an error containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || got != c.archive {
			t.Errorf("%s: archive target %+v %v, want %+v", c.name, got, err, c.archive)
		}
		if got, err := cl.RestoreTarget(plugin); err != nil || got != c.restore {
			t.Errorf("%s: restore target %+v %v, want %+v", c.name, got, err, c.restore)
		}
	}
}

func TestArchivesWAL(t *testing.T) {
	for _, c := range []struct {
		name, plugins, extra string
		want                 bool
		why, err             string // substrings: why it does not archive, the error
	}{
		{name: "designated", plugins: `[{"name":"cnpgi.plinth.dev","isWALArchiver":true}]`, want: true},
		{name: "unset, alone (the API before isWALArchiver)", plugins: `[{"name":"cnpgi.plinth.dev"}]`, want: true},
		{name: "unset beside a plugin that archives nothing", plugins: `[{"name":"hello"},{"name":"cnpgi.plinth.dev"}]`, want: true},
		{name: "false, alone (#606)", plugins: `[{"name":"cnpgi.plinth.dev","isWALArchiver":false}]`, why: "spec.plugins[0].isWALArchiver is false"},
		{
			name:    "false on a second entry, the first archives",
			plugins: `[{"name":"barman-cloud.cloudnative-pg.io","isWALArchiver":true},{"name":"cnpgi.plinth.dev","isWALArchiver":false}]`,
			why:     "spec.plugins[1].isWALArchiver is false",
		},
		{
			name:    "unset, another entry archives",
			plugins: `[{"name":"cnpgi.plinth.dev"},{"name":"barman-cloud.cloudnative-pg.io","isWALArchiver":true}]`,
			why:     `spec.plugins[1] ("barman-cloud.cloudnative-pg.io") is the WAL archiver`,
		},
		{
			name:    "unset, the archiver entry disabled",
			plugins: `[{"name":"cnpgi.plinth.dev"},{"name":"barman-cloud.cloudnative-pg.io","isWALArchiver":true,"enabled":false}]`,
			want:    true,
		},
		{
			name: "unset, the in-tree barmanObjectStore archives", plugins: `[{"name":"cnpgi.plinth.dev"}]`,
			extra: `,"backup":{"barmanObjectStore":{"destinationPath":"s3://b/"}}`, why: "barmanObjectStore",
		},
		{name: "designated despite barmanObjectStore", plugins: `[{"name":"cnpgi.plinth.dev","isWALArchiver":true}]`, extra: `,"backup":{"barmanObjectStore":{}}`, want: true},
		{name: "not listed", plugins: `[{"name":"other","isWALArchiver":true}]`, err: "lists no cnpgi.plinth.dev"},
		{name: "disabled", plugins: `[{"name":"cnpgi.plinth.dev","enabled":false,"isWALArchiver":true}]`, err: "disabled"},
	} {
		cl, err := cluster.Parse([]byte(`{"metadata":{"name":"pg"},"spec":{"plugins":` + c.plugins + c.extra + `}}`))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, why, err := cl.ArchivesWAL(plugin)
		switch {
		case c.err != "":
			if !errors.Is(err, cluster.ErrPluginNotUsed) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want ErrPluginNotUsed containing %q", c.name, err, c.err)
			}
		case err != nil || got != c.want || !strings.Contains(why, c.why) || (got && why != ""):
			t.Errorf("%s: %v %q %v, want %v %q", c.name, got, why, err, c.want, c.why)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, def := range []string{"", "{", `{"metadata":{}}`, `[]`} {
		_, err := cluster.Parse([]byte(def))
		var ce *input.Error
		if !errors.As(err, &ce) {
			t.Errorf("Parse(%q): %v, want an input.Error", def, err)
		}
	}
	cl, _ := cluster.Parse([]byte(`{"metadata":{"name":"pg","annotations":{"cnpg.io/skipEmptyWalArchiveCheck":"enabled"}},"spec":{}}`))
	if !cl.SkipEmptyWALArchiveCheck() {
		t.Error("annotation not read")
	}
	if _, err := cl.ArchiveTarget(plugin); !errors.Is(err, cluster.ErrPluginNotUsed) {
		t.Errorf("not used: %v", err)
	}
}

func TestRelocations(t *testing.T) {
	c, err := cluster.Parse([]byte(`{"metadata":{"name":"n"},"spec":{"tablespaces":[{"name":"fast"},{"name":"slow"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Relocations(cluster.Target{TablespaceMap: "slow:/mnt/slow, archive:/mnt/a"})
	want := map[string]string{"fast": "/var/lib/postgresql/tablespaces/fast/data", "slow": "/mnt/slow", "archive": "/mnt/a"}
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"x", "x:", ":/a", "x:rel", "x:/a,x:/b", "x:/a/../b"} {
		if _, err := cluster.ParseTablespaceMap(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
