package pgconfig

import (
	"maps"
	"testing"
)

const plugin = "cnpgi.plinth.dev"

func TestEnrich(t *testing.T) {
	uses := []byte(`{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"` + plugin + `"}]}}`)
	other := []byte(`{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"x.io"}]}}`)
	cnpg := map[string]string{"archive_mode": "on", "archive_command": "/controller/manager wal-archive %p", "wal_level": "logical", "shared_buffers": "128MB"}
	cases := []struct {
		name    string
		configs map[string]string
		cluster []byte
		op      Operation
		want    map[string]string // nil: no answer
	}{
		{"only archive_timeout missing", cnpg, uses, OperationReconcile,
			map[string]string{"archive_mode": "on", "archive_command": "/controller/manager wal-archive %p", "wal_level": "logical", "shared_buffers": "128MB", "archive_timeout": "5min"}},
		{"user values kept", map[string]string{"archive_timeout": "1min", "archive_mode": "always", "wal_level": "logical"}, uses, OperationInit, nil},
		{"empty configuration", nil, uses, OperationUnspecified, Defaults()},
		{"old operator without a cluster", map[string]string{"x": "1"}, nil, OperationUnspecified,
			map[string]string{"x": "1", "archive_mode": "on", "archive_timeout": "5min", "wal_level": "replica"}},
		{"restore", cnpg, uses, OperationRestore, nil},
		{"major upgrade", cnpg, uses, OperationUpgrade, nil},
		{"cluster without the plugin", cnpg, other, OperationReconcile, nil},
	}
	for _, c := range cases {
		before := maps.Clone(c.configs)
		got, err := Enrich(c.configs, c.cluster, c.op, plugin)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if (got == nil) != (c.want == nil) || !maps.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		if !maps.Equal(before, c.configs) {
			t.Errorf("%s: the caller's map was modified", c.name)
		}
	}
	if _, err := Enrich(nil, []byte(`{`), OperationReconcile, plugin); err == nil {
		t.Error("a broken cluster definition was accepted")
	}
}
