package upstreamtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cloudnative-pg/cnpg-i/pkg/identity"
	"github.com/cloudnative-pg/cnpg-i/pkg/wal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal/waltest"
)

// TestIdentity runs the operator's connection handshake with the upstream client.
func TestIdentity(t *testing.T) {
	t.Parallel()
	p := startPlugin(t, 1)
	c := identity.NewIdentityClient(p.conn)
	ctx := ctxT(t)
	meta, err := c.GetPluginMetadata(ctx, &identity.GetPluginMetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if meta.GetName() != pluginName || meta.GetVersion() == "" || meta.GetDisplayName() == "" || meta.GetDescription() == "" {
		t.Fatalf("metadata lacks required fields: %v", meta)
	}
	if meta.GetManifest()["objectStores"] != "local,s3,s3gz" || meta.GetManifest()["defaultObjectStore"] != "local" {
		t.Fatalf("manifest %v", meta.GetManifest())
	}
	caps, err := c.GetPluginCapabilities(ctx, &identity.GetPluginCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var types []identity.PluginCapability_Service_Type
	for _, cp := range caps.GetCapabilities() {
		types = append(types, cp.GetService().GetType())
	}
	if !slices.Contains(types, identity.PluginCapability_Service_TYPE_WAL_SERVICE) {
		t.Fatalf("capabilities %v lack the WAL service", types)
	}
	// That the list is exactly the services served: TestCapabilitiesAreExactlyTheServedServices.
	probe, err := c.Probe(ctx, &identity.ProbeRequest{})
	if err != nil || !probe.GetReady() {
		t.Fatalf("probe: %v %v", probe, err)
	}
	walCaps, err := wal.NewWALClient(p.conn).GetCapabilities(ctx, &wal.WALCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var rpcs []wal.WALCapability_RPC_Type
	for _, cp := range walCaps.GetCapabilities() {
		rpcs = append(rpcs, cp.GetRpc().GetType())
	}
	slices.Sort(rpcs)
	if !slices.Equal(rpcs, []wal.WALCapability_RPC_Type{1, 2, 3, 4}) {
		t.Fatalf("WAL capabilities %v, want archive, restore, status, set-first-required", rpcs)
	}
}

// segment writes a WAL segment of sysID for name into dir (waltest.Segment).
func (p *plugin) segment(t *testing.T, dir, name string, sysID uint64) (string, []byte) {
	t.Helper()
	b := waltest.Segment(name, sysID)
	path := filepath.Join(dir, name)
	p.owner.writeFile(t, path, b, 0o600)
	return path, b
}

// TestWAL exercises every WAL RPC through the upstream client, against the POSIX and the
// S3 store, sending requests as both the current operator (check_empty_wal_archive and mode
// set) and older ones (neither field) do.
func TestWAL(t *testing.T) {
	t.Parallel()
	p := startPlugin(t, 1)
	c := wal.NewWALClient(p.conn)
	for _, store := range []string{"local", "s3"} {
		t.Run(store, func(t *testing.T) {
			ctx := ctxT(t)
			def := cluster("pg-"+store, map[string]string{"objectStore": store})
			pgwal := p.owner.mkdir(t, filepath.Join(p.home, "pgdata-"+store, "pg_wal"))
			const seg1, seg2 = "000000010000000000000001", "000000010000000000000002"
			path1, data1 := p.segment(t, pgwal, seg1, 7301234567890123456)
			_, err := c.Archive(ctx, &wal.WALArchiveRequest{ClusterDefinition: def, SourceFileName: path1, CheckEmptyWalArchive: proto.Bool(true)})
			if err != nil {
				t.Fatalf("archive into an empty archive: %v", err)
			}
			if _, err := c.Archive(ctx, &wal.WALArchiveRequest{ClusterDefinition: def, SourceFileName: path1}); err != nil {
				t.Fatalf("archive the same segment again: %v", err)
			}
			path2, data2 := p.segment(t, pgwal, seg2, 7301234567890123456)
			if _, err := c.Archive(ctx, &wal.WALArchiveRequest{ClusterDefinition: def, SourceFileName: path2, CheckEmptyWalArchive: proto.Bool(false)}); err != nil {
				t.Fatal(err)
			}
			p.segment(t, pgwal, seg1, 7301234567890123456) // other bytes under an archived name
			_, err = c.Archive(ctx, &wal.WALArchiveRequest{ClusterDefinition: def, SourceFileName: path1})
			if status.Code(err) != codes.AlreadyExists {
				t.Fatalf("different bytes under an archived name: %v, want AlreadyExists", err)
			}

			// Another system under the same server name, asking for the empty-archive check.
			otherWAL := p.owner.mkdir(t, filepath.Join(p.home, "pgdata-other-"+store, "pg_wal"))
			other, _ := p.segment(t, otherWAL, "000000010000000000000009", 42)
			_, err = c.Archive(ctx, &wal.WALArchiveRequest{ClusterDefinition: def, SourceFileName: other, CheckEmptyWalArchive: proto.Bool(true)})
			if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "not empty") {
				t.Fatalf("foreign WAL with check_empty_wal_archive: %v, want FailedPrecondition", err)
			}

			dest := filepath.Join(p.owner.mkdir(t, filepath.Join(p.home, "restore-"+store)), "RECOVERYXLOG")
			for _, r := range []struct {
				name string
				want []byte
				mode wal.WALRestoreRequest_Mode
			}{{seg1, data1, wal.WALRestoreRequest_MODE_UNSPECIFIED}, {seg2, data2, wal.WALRestoreRequest_MODE_REWIND}} {
				_, err := c.Restore(ctx, &wal.WALRestoreRequest{ClusterDefinition: def, SourceWalName: r.name, DestinationFileName: dest, Mode: r.mode})
				if err != nil {
					t.Fatalf("restore %s: %v", r.name, err)
				}
				if got, err := os.ReadFile(dest); err != nil || !bytes.Equal(got, r.want) {
					t.Fatalf("restored %s differs (%d bytes, %v)", r.name, len(got), err)
				}
			}
			_, err = c.Restore(ctx, &wal.WALRestoreRequest{ClusterDefinition: def, SourceWalName: "000000010000000000000003", DestinationFileName: dest + "-3", Mode: wal.WALRestoreRequest_MODE_RECOVERY})
			if status.Code(err) != codes.NotFound {
				t.Fatalf("restore of a missing segment: %v, want NotFound", err)
			}
			if _, statErr := os.Stat(dest + "-3"); statErr == nil {
				t.Fatal("a failed restore created its destination")
			}

			if _, err := c.SetFirstRequired(ctx, &wal.SetFirstRequiredRequest{ClusterDefinition: def, FirstRequiredWal: seg2}); err != nil {
				t.Fatal(err)
			}
			st, err := c.Status(ctx, &wal.WALStatusRequest{ClusterDefinition: def})
			if err != nil {
				t.Fatal(err)
			}
			info := st.GetAdditionalInformation()
			if st.GetFirstWal() != seg1 || st.GetLastWal() != seg2 || info["segments"] != "2" || info["firstRequiredWal"] != seg2 ||
				info["objectStore"] != store || info["serverName"] != "pg-"+store {
				t.Fatalf("status %v", st)
			}

			// isWALArchiver false (CloudNativePG asks every plugin anyway, #606): the call
			// succeeds, so PostgreSQL moves on, and the store is left as it was.
			path3, _ := p.segment(t, pgwal, "000000010000000000000003", 7301234567890123456)
			notArchiver := bytes.Replace(def, []byte(`"isWALArchiver":true`), []byte(`"isWALArchiver":false`), 1)
			if _, err := c.Archive(ctx, &wal.WALArchiveRequest{ClusterDefinition: notArchiver, SourceFileName: path3}); err != nil {
				t.Fatalf("archive with isWALArchiver false: %v, want success without storing", err)
			}
			if st, err := c.Status(ctx, &wal.WALStatusRequest{ClusterDefinition: def}); err != nil || st.GetLastWal() != seg2 {
				t.Fatalf("after an archive with isWALArchiver false the store's last segment is %q (%v), want %s", st.GetLastWal(), err, seg2)
			}
		})
	}
}

// TestWALErrors: requests a client must fix are InvalidArgument, configuration mismatches
// FailedPrecondition, each naming the problem.
func TestWALErrors(t *testing.T) {
	t.Parallel()
	p := startPlugin(t, 1)
	c := wal.NewWALClient(p.conn)
	ctx := ctxT(t)
	cases := []struct {
		name string
		call func() error
		code codes.Code
		msg  string
	}{
		{"no cluster", func() error {
			_, err := c.Archive(ctx, &wal.WALArchiveRequest{SourceFileName: "/x/pg_wal/000000010000000000000001"})
			return err
		}, codes.InvalidArgument, "cluster_definition"},
		{"source outside PGDATA", func() error {
			_, err := c.Archive(ctx, &wal.WALArchiveRequest{ClusterDefinition: cluster("pg", nil), SourceFileName: "/etc/passwd"})
			return err
		}, codes.InvalidArgument, "source_file_name"},
		{"relative source (PGDATA's)", func() error {
			_, err := c.Archive(ctx, &wal.WALArchiveRequest{ClusterDefinition: cluster("pg", nil), SourceFileName: "pg_wal/000000010000000000000001"})
			return err
		}, codes.FailedPrecondition, "does not exist"},
		{"unknown store", func() error {
			_, err := c.Status(ctx, &wal.WALStatusRequest{ClusterDefinition: cluster("pg", map[string]string{"objectStore": "nope"})})
			return err
		}, codes.FailedPrecondition, `unknown object store "nope"`},
		{"unknown parameter", func() error {
			_, err := c.Status(ctx, &wal.WALStatusRequest{ClusterDefinition: cluster("pg", map[string]string{"bucket": "x"})})
			return err
		}, codes.InvalidArgument, "spec.plugins[0].parameters.bucket"},
		// barman-cloud's parameter, from a plugin that does not read ObjectStore resources
		// (no Kubernetes credentials): refused with the reason and what to use instead.
		{"ObjectStore without Kubernetes", func() error {
			_, err := c.Status(ctx, &wal.WALStatusRequest{ClusterDefinition: cluster("pg", map[string]string{"barmanObjectName": "minio-store"})})
			return err
		}, codes.FailedPrecondition, `barmanObjectName "minio-store" names an ObjectStore resource, and this plugin does not read them`},
		{"plugin not enabled", func() error {
			_, err := c.Status(ctx, &wal.WALStatusRequest{ClusterDefinition: []byte(`{"metadata":{"name":"pg"},"spec":{}}`)})
			return err
		}, codes.FailedPrecondition, "does not use this plugin"},
		{"bad first required", func() error {
			_, err := c.SetFirstRequired(ctx, &wal.SetFirstRequiredRequest{ClusterDefinition: cluster("pg", nil), FirstRequiredWal: "junk"})
			return err
		}, codes.InvalidArgument, "first_required_wal"},
		{"missing source", func() error {
			_, err := c.Archive(ctx, &wal.WALArchiveRequest{ClusterDefinition: cluster("pg", nil), SourceFileName: filepath.Join(p.home, "pg_wal", "000000010000000000000001")})
			return err
		}, codes.FailedPrecondition, "does not exist"},
		{"bad restore name", func() error {
			_, err := c.Restore(ctx, &wal.WALRestoreRequest{ClusterDefinition: cluster("pg", nil), SourceWalName: "../etc", DestinationFileName: "/tmp/x"})
			return err
		}, codes.InvalidArgument, "source_wal_name"},
	}
	for _, tc := range cases {
		err := tc.call()
		if st := status.Convert(err); st.Code() != tc.code || !strings.Contains(st.Message(), tc.msg) {
			t.Errorf("%s: %v, want %v containing %q", tc.name, err, tc.code, tc.msg)
		}
	}
	// The CLI checks whom it talks to, as the instance manager keys plugins by name.
	out, err := exec.CommandContext(ctx, pluginBinary(t), "wal-archive", "-socket="+p.socket, "-plugin-name=other.example.com",
		"-server-name=pg", "/x/pg_wal/000000010000000000000001").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `serves plugin "cnpgi.plinth.dev", not "other.example.com"`) {
		t.Errorf("CLI against another plugin name: %v %s", err, out)
	}
	// The sidecar's startup probe.
	if out, err := exec.CommandContext(ctx, pluginBinary(t), "health", "-socket="+p.socket).CombinedOutput(); err != nil {
		t.Errorf("health against the serving plugin: %v %s", err, out)
	}
	if out, err := exec.CommandContext(ctx, pluginBinary(t), "health", "-socket="+p.socket+".missing").CombinedOutput(); err == nil {
		t.Errorf("health without a plugin succeeded: %s", out)
	}
}
