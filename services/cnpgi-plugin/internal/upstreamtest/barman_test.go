package upstreamtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/cloudnative-pg/cnpg-i/pkg/backup"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// barmanSnappyShim runs a barman-cloud command with python-snappy's CRC-32C replaced by
// crcmod's (the same values): Debian 12's python3-snappy 0.5.3 fails computing it on
// Python 3.11 ("PY_SSIZE_T_CLEAN macro must be defined"), so --snappy does not work on a
// stock Debian 12. The stream format is python-snappy's, untouched.
const barmanSnappyShim = `import sys, snappy.snappy, crcmod.predefined
snappy.snappy._crc32c = crcmod.predefined.mkCrcFun('crc-32c')
from barman.clients.cloud_walarchive import main
sys.argv[0] = 'barman-cloud-wal-archive'
main()`

// barman runs barman-cli-cloud's commands against the test's S3 server.
type barman struct {
	t   *testing.T
	ctx context.Context
	p   *plugin
	url string // s3://bucket/barman: the s3gz store
}

func (b barman) run(args ...string) (string, error) {
	cmd := exec.CommandContext(b.ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+b.p.s3.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+b.p.s3.SecretAccessKey,
		"AWS_DEFAULT_REGION=us-east-1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (b barman) must(args ...string) string {
	b.t.Helper()
	out, err := b.run(args...)
	if err != nil {
		b.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestBarmanInteroperability (issue #14): a real PostgreSQL archives through the plugin
// (gzip, barman's layout) and is backed up twice through the upstream client; then barman's
// own tools (barman-cli-cloud 3.4) list, show (console and JSON), delete and restore our
// backups and restore our WAL byte-identical; and WAL that barman-cloud-wal-archive writes
// in every compression it has (none, gzip, bzip2, snappy) the plugin restores byte-identical.
func TestBarmanInteroperability(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"barman-cloud-backup-show", "barman-cloud-wal-archive", "barman-cloud-wal-restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.SkipOrFail(t, tool+" not found: apt-get install barman-cli-cloud")
		}
	}
	// barman's tools start a Python process each (seconds on a busy machine), some forty times.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	pg, p, opts := archivingPostgres(t, "pgb-1", "pgb", "s3gz", "ALTER SYSTEM SET wal_keep_size = '1GB'")
	bin := pluginBinary(t)
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var first, last string
	query(t, ctx, conn, "SELECT pg_walfile_name(pg_current_wal_lsn())", &first)
	query(t, ctx, conn, "CREATE TABLE t AS SELECT generate_series(1, 50000) AS x")
	query(t, ctx, conn, "SELECT pg_walfile_name(pg_switch_wal())", &last)
	waitArchived(t, ctx, conn, last)

	def := cluster("pgb", map[string]string{"objectStore": "s3gz"})
	bc := backup.NewBackupClient(p.conn)
	var ids []string
	for _, name := range []string{"first", "second"} {
		res, err := bc.Backup(ctx, &backup.BackupRequest{ClusterDefinition: def, BackupDefinition: backupDefinition(name)})
		if err != nil {
			t.Fatalf("backup %s: %v", name, err)
		}
		ids = append(ids, res.GetBackupId())
	}
	query(t, ctx, conn, "SELECT pg_walfile_name(pg_switch_wal())", &last)
	waitArchived(t, ctx, conn, last)

	b := barman{t: t, ctx: ctx, p: p, url: "s3://" + p.bucket + "/barman"}
	ep := "--endpoint-url=" + p.s3.Endpoint
	list := b.must("barman-cloud-backup-list", ep, b.url, "pgb")
	for _, id := range ids {
		if !strings.Contains(list, id) {
			t.Fatalf("backup-list lacks %s:\n%s", id, list)
		}
		show := b.must("barman-cloud-backup-show", ep, b.url, "pgb", id)
		if !strings.Contains(show, "Backup "+id) || !strings.Contains(show, "Begin WAL") || !strings.Contains(show, "Status") {
			t.Fatalf("backup-show %s:\n%s", id, show)
		}
		var js map[string]map[string]any
		if err := json.Unmarshal([]byte(b.must("barman-cloud-backup-show", ep, "--format=json", b.url, "pgb", id)), &js); err != nil ||
			js["pgb"]["backup_id"] != id || js["pgb"]["status"] != "DONE" {
			t.Fatalf("backup-show --format=json %s: %v %v", id, js, err)
		}
	}
	// Our archive, read by barman-cloud-wal-restore (before barman-cloud-backup-delete,
	// which removes the WAL older than the oldest backup left).
	walDir := t.TempDir()
	for _, name := range segmentRange(t, first, last) {
		out := filepath.Join(walDir, name)
		b.must("barman-cloud-wal-restore", ep, b.url, "pgb", name, out)
		want, _ := os.ReadFile(filepath.Join(opts.DataDir, "pg_wal", name))
		if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("barman-cloud-wal-restore %s: %d bytes, %v", name, len(got), err)
		}
	}

	dry := b.must("barman-cloud-backup-delete", ep, "--dry-run", "-b", ids[0], b.url, "pgb")
	if !strings.Contains(dry, ids[0]) {
		t.Fatalf("backup-delete --dry-run:\n%s", dry)
	}
	b.must("barman-cloud-backup-delete", ep, "-b", ids[0], b.url, "pgb")
	if list := b.must("barman-cloud-backup-list", ep, b.url, "pgb"); strings.Contains(list, ids[0]) || !strings.Contains(list, ids[1]) {
		t.Fatalf("after backup-delete:\n%s", list)
	}
	dest := filepath.Join(t.TempDir(), "restored")
	b.must("barman-cloud-restore", ep, b.url, "pgb", ids[1], dest)
	if label, err := os.ReadFile(filepath.Join(dest, "backup_label")); err != nil || !bytes.Contains(label, []byte("START WAL LOCATION")) {
		t.Fatalf("barman-cloud-restore: %q %v", label, err)
	}
	// barman's archive, every compression it writes, read by the plugin.
	segs := segmentRange(t, first, last)
	for i, c := range []struct {
		name string
		args []string
		ext  string
	}{
		{"none", []string{"barman-cloud-wal-archive"}, ""},
		{"gzip", []string{"barman-cloud-wal-archive", "--gzip"}, ".gz"},
		{"bzip2", []string{"barman-cloud-wal-archive", "--bzip2"}, ".bz2"},
		{"snappy", []string{"/usr/bin/python3", "-c", barmanSnappyShim, "--snappy"}, ".snappy"},
	} {
		seg := segs[i%len(segs)]
		server := "frombarman-" + c.name
		b.must(append(c.args, ep, b.url, server, filepath.Join(opts.DataDir, "pg_wal", seg))...)
		key := "barman/" + server + "/wals/" + seg[:16] + "/" + seg + c.ext
		if _, err := p.s3.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(key)}); err != nil {
			t.Fatalf("barman (%s) did not write %s: %v", c.name, key, err)
		}
		out := filepath.Join(opts.DataDir, "restored-"+c.name)
		got, err := exec.CommandContext(ctx, bin, "wal-restore", "-socket="+p.socket, "-server-name="+server, "-object-store=s3gz", seg, out).CombinedOutput()
		if err != nil {
			t.Fatalf("plugin restore of barman's %s: %v\n%s", c.name, err, got)
		}
		want, _ := os.ReadFile(filepath.Join(opts.DataDir, "pg_wal", seg))
		if data, err := os.ReadFile(out); err != nil || !bytes.Equal(data, want) {
			t.Fatalf("barman's %s restored by the plugin: %d bytes, %v", c.name, len(data), err)
		}
	}
}
