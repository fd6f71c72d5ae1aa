package upstreamtest

import (
	"bufio"
	"slices"
	"strings"
	"testing"

	"github.com/cloudnative-pg/cnpg-i/pkg/backup"
	"github.com/cloudnative-pg/cnpg-i/pkg/operator"
	"github.com/cloudnative-pg/cnpg-i/pkg/wal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/hostiletest"
)

// TestHostileClient probes every CNPG-I service the plugin serves as a hostile client
// would: huge and NUL strings in each string field, unknown fields, garbage and oversized
// metadata (hostiletest); then what hostiletest cannot reach, the JSON documents in bytes
// fields: cluster and backup definitions that are huge, not JSON, nested without end, with
// NUL, megabyte names and parameter keys, unknown fields. Each answer is a documented code
// with a short message, no log line of the plugin repeats the input, and the plugin still
// answers.
func TestHostileClient(t *testing.T) {
	t.Parallel()
	p := startOperatorPlugin(t)
	services := servedServices(t, ctxT(t), p.conn)
	hostiletest.Run(t, hostiletest.Target{Conn: p.conn, Services: services})

	huge := strings.Repeat("A", hostiletest.HugeLen)
	definitions := map[string]string{
		"not JSON":             "\x00\xff{garbage",
		"truncated JSON":       `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"` + pluginName,
		"deeply nested":        strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000),
		"huge name":            `{"metadata":{"name":"` + huge + `"}}`,
		"NUL in the name":      `{"metadata":{"name":"p\u0000g"},"spec":{"plugins":[{"name":"` + pluginName + `"}]}}`,
		"huge parameter key":   `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"` + pluginName + `","parameters":{"` + huge + `":"x"}}]}}`,
		"huge parameter value": `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"` + pluginName + `","parameters":{"objectStore":"` + huge + `"}}]}}`,
		"huge server name":     `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"` + pluginName + `","parameters":{"serverName":"` + huge[:4096] + `"}}]}}`,
		"unknown fields":       `{"metadata":{"name":"pg","x":[1,2,{"y":null}]},"spec":{"plugins":[{"name":"` + pluginName + `","z":1}]},"w":1e999}`,
		"huge number":          `{"metadata":{"name":"pg","generation":1` + strings.Repeat("0", 100000) + `}}`,
		"wrong types":          `{"metadata":{"name":["pg"]},"spec":{"plugins":"x"}}`,
		"3 MiB of padding":     `{"metadata":{"name":"pg","annotations":{"x":"` + strings.Repeat("p", 3<<20) + `"}}}`,
	}
	ctx := ctxT(t)
	walc, opc, bkc := wal.NewWALClient(p.conn), operator.NewOperatorClient(p.conn), backup.NewBackupClient(p.conn)
	for name, def := range definitions {
		calls := map[string]func() error{
			"WAL.Archive": func() error {
				_, err := walc.Archive(ctx, &wal.WALArchiveRequest{ClusterDefinition: []byte(def), SourceFileName: "pg_wal/000000010000000000000001"})
				return err
			},
			"WAL.Restore": func() error {
				_, err := walc.Restore(ctx, &wal.WALRestoreRequest{ClusterDefinition: []byte(def), SourceWalName: "000000010000000000000001", DestinationFileName: "pg_wal/RECOVERYXLOG"})
				return err
			},
			"WAL.Status": func() error {
				_, err := walc.Status(ctx, &wal.WALStatusRequest{ClusterDefinition: []byte(def)})
				return err
			},
			"Operator.ValidateClusterCreate": func() error {
				_, err := opc.ValidateClusterCreate(ctx, &operator.OperatorValidateClusterCreateRequest{Definition: []byte(def)})
				return err
			},
			"Operator.MutateCluster": func() error {
				_, err := opc.MutateCluster(ctx, &operator.OperatorMutateClusterRequest{Definition: []byte(def)})
				return err
			},
			"Backup.Backup": func() error {
				_, err := bkc.Backup(ctx, &backup.BackupRequest{ClusterDefinition: []byte(def), BackupDefinition: []byte(def)})
				return err
			},
		}
		for rpc, call := range calls {
			err := call()
			st := status.Convert(err)
			switch st.Code() {
			case codes.OK, codes.InvalidArgument, codes.FailedPrecondition, codes.NotFound, codes.ResourceExhausted:
			case codes.Unavailable: // a well-formed Backup: the plugin has no PostgreSQL to back up here
				if rpc != "Backup.Backup" {
					t.Errorf("%s with %s: %v %.200q", rpc, name, st.Code(), st.Message())
				}
			default:
				t.Errorf("%s with %s: %v %.200q", rpc, name, st.Code(), st.Message())
			}
			if len(st.Message()) > hostiletest.MaxMessageLen {
				t.Errorf("%s with %s: a %d-byte message", rpc, name, len(st.Message()))
			}
		}
	}
	// Backup definitions, with a valid cluster.
	def := cluster("pg", nil)
	for name, bdef := range definitions {
		_, err := bkc.Backup(ctx, &backup.BackupRequest{ClusterDefinition: def, BackupDefinition: []byte(bdef)})
		st := status.Convert(err)
		// Valid Backups (named pg, fields a Backup does not have ignored): refused only for want
		// of a PostgreSQL to back up.
		wellFormed := slices.Contains([]string{"unknown fields", "huge parameter key", "huge parameter value", "huge server name", "huge number"}, name)
		if wellFormed && st.Code() != codes.Unavailable || !wellFormed && st.Code() != codes.InvalidArgument && st.Code() != codes.ResourceExhausted ||
			len(st.Message()) > hostiletest.MaxMessageLen {
			t.Errorf("backup definition %s: %v %.200q", name, st.Code(), st.Message())
		}
	}
	if _, err := walc.GetCapabilities(ctx, &wal.WALCapabilitiesRequest{}); err != nil {
		t.Fatalf("the plugin stopped answering: %v", err)
	}
	// No log line repeats what the client sent.
	sc := bufio.NewScanner(strings.NewReader(p.logs.String()))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		if len(sc.Text()) > 8<<10 {
			t.Errorf("a %d-byte log line: %.300s", len(sc.Text()), sc.Text())
		}
	}
}
