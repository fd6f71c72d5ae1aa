package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	walv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/wal/v1"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/plugin"
)

func TestSplitFlags(t *testing.T) {
	cases := []struct {
		args, flags, pos []string
	}{
		{[]string{"-socket=/s", "-server-name=pg", "pg_wal/x"}, []string{"-socket=/s", "-server-name=pg"}, []string{"pg_wal/x"}},
		{[]string{"x", "y"}, []string{}, []string{"x", "y"}},
		{[]string{"-mode=rewind", "--", "-odd-name", "/d"}, []string{"-mode=rewind"}, []string{"-odd-name", "/d"}},
		{[]string{"-h"}, []string{"-h"}, nil},
	}
	for _, c := range cases {
		flags, pos := splitFlags(c.args)
		if !slices.Equal(flags, c.flags) || !slices.Equal(pos, c.pos) {
			t.Errorf("splitFlags(%q) = %q %q", c.args, flags, pos)
		}
	}
}

func TestClusterDefinitionEnablesThePlugin(t *testing.T) {
	def, err := Config{Endpoint: plugin.Endpoint{PluginName: "cnpgi.plinth.dev"}, ServerName: "pg15", ObjectStore: "s3"}.clusterDefinition()
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Metadata struct{ Name string }
		Spec     struct {
			Plugins []struct {
				Name       string
				Parameters map[string]string
			}
		}
	}
	if err := json.Unmarshal(def, &c); err != nil {
		t.Fatal(err)
	}
	if c.Metadata.Name != "pg15" || len(c.Spec.Plugins) != 1 || c.Spec.Plugins[0].Name != "cnpgi.plinth.dev" ||
		c.Spec.Plugins[0].Parameters["serverName"] != "pg15" || c.Spec.Plugins[0].Parameters["objectStore"] != "s3" {
		t.Fatalf("definition %s", def)
	}
	if _, err := (Config{Endpoint: plugin.Endpoint{PluginName: "p"}}).clusterDefinition(); err == nil || !strings.Contains(err.Error(), "-server-name") {
		t.Fatalf("no server name: %v", err)
	}
}

func TestRunRefusesBadInvocations(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "cnpgi.plinth.dev")
	cases := []struct {
		cmd  string
		args []string
		want string
	}{
		{"wal-archive", []string{"-server-name=pg"}, "wal-archive takes PATH"},
		{"wal-restore", []string{"-server-name=pg", "000000010000000000000001"}, "wal-restore takes NAME PATH"},
		{"wal-archive", []string{"/x"}, "-server-name"},
		{"wal-archive", []string{"-socket=" + socket, "-server-name=pg", "/x"}, "is the plugin running?"},
		{"wal-archive", []string{"-bogus=1", "/x"}, "bogus"},
	}
	for _, c := range cases {
		err := Run(context.Background(), c.cmd, c.args, nil, IO{Err: &bytes.Buffer{}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: %v, want an error containing %q", c.cmd, c.args, err, c.want)
		}
	}
	var help bytes.Buffer
	if err := Run(context.Background(), "wal-restore", []string{"-h"}, nil, IO{Err: &help}); err != nil || !strings.Contains(help.String(), "-mode") {
		t.Fatalf("help: %v %q", err, help.String())
	}
}

// failingWAL answers every archive and restore with a short error, as the plugin does for a
// name it refuses.
type failingWAL struct{ walv1.WALClient }

func (failingWAL) Archive(context.Context, *walv1.WALArchiveRequest, ...grpc.CallOption) (*walv1.WALArchiveResult, error) {
	return nil, status.Error(codes.InvalidArgument, "source_file_name: not a WAL file")
}

func (failingWAL) Restore(context.Context, *walv1.WALRestoreRequest, ...grpc.CallOption) (*walv1.WALRestoreResult, error) {
	return nil, status.Error(codes.InvalidArgument, "source_wal_name: not a WAL file name")
}

// TestErrorsEchoArgumentsBounded: a huge argument comes back in an error of bounded size
// (PostgreSQL logs it), not in full.
func TestErrorsEchoArgumentsBounded(t *testing.T) {
	huge := strings.Repeat("0", 100_000)
	ctx := context.Background()
	errs := map[string]error{
		"archive": archive(ctx, failingWAL{}, Config{}, nil, huge),
		"restore": restore(ctx, failingWAL{}, Config{Mode: "recovery"}, nil, huge, "pg_wal/x"),
		"mode":    restore(ctx, failingWAL{}, Config{Mode: huge}, nil, "x", "pg_wal/x"),
		"check":   archive(ctx, failingWAL{}, Config{CheckEmpty: huge}, nil, "x"),
	}
	for name, err := range errs {
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if n := len(err.Error()); n > 400 {
			t.Errorf("%s: a %d-byte error for a 100,000-byte argument: %.120s…", name, n, err)
		}
		if !strings.Contains(err.Error(), "truncated") {
			t.Errorf("%s: %q does not say the argument was cut", name, err)
		}
	}
}
