package upstreamtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cloudnative-pg/cnpg-i/pkg/backup"
	restorejob "github.com/cloudnative-pg/cnpg-i/pkg/restore/job"
	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// backupDefinition is a CloudNativePG Backup object as the instance manager sends it.
func backupDefinition(name string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"postgresql.cnpg.io/v1","kind":"Backup","metadata":{"name":%q,"namespace":"default"},`+
		`"spec":{"cluster":{"name":"pg15"},"method":"plugin","online":true,"onlineConfiguration":{"immediateCheckpoint":true,"waitForArchive":true},`+
		`"pluginConfiguration":{"name":%q}}}`, name, pluginName)
}

// recoveryCluster bootstraps a new cluster by recovery from pg15's archive in S3 up to the
// restore point target.
func recoveryCluster(target string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster","metadata":{"name":"pg15-restored","namespace":"default"},`+
		`"spec":{"instances":1,"plugins":[{"name":%[1]q,"isWALArchiver":true,"parameters":{"objectStore":"s3"}}],`+
		`"bootstrap":{"recovery":{"source":"origin","recoveryTarget":{"targetName":%[2]q}}},`+
		`"externalClusters":[{"name":"origin","plugin":{"name":%[1]q,"parameters":{"objectStore":"s3","serverName":"pg15"}}}]}}`, pluginName, target)
}

// TestBackupAndPointInTimeRecovery is the plugin's end-to-end recovery: a real PostgreSQL
// 15 archives its WAL into S3 through the plugin's CLI; Backup.Backup (upstream client)
// takes an online base backup; more rows are written, a restore point is created, still
// more rows follow and the WAL is switched; RestoreJobHooks.Restore (upstream client)
// fills a new data directory, and PostgreSQL started there with the returned configuration
// replays the archive through the plugin up to the restore point: exactly the rows written
// before it. The maintenance CLI then rebuilds the catalog from the store and plans
// retention.
func TestBackupAndPointInTimeRecovery(t *testing.T) {
	t.Parallel()
	if _, err := pglocal.FindBinaries(); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	ctx := ctxT(t)
	o := runAs(t)
	pgHome := home(t, o)
	opts := pglocal.Options{DataDir: filepath.Join(pgHome, "pgdata"), NoSync: true}
	pg, err := pglocal.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	restored := filepath.Join(pgHome, "restored")
	p := startPlugin(t, 4, "PLINTH_CNPGI_INSTANCE_URL="+pg.URL("postgres"), "PLINTH_CNPGI_PGDATA="+restored,
		"PLINTH_CNPGI_EXTRA_PGDATA="+pgHome, "PLINTH_CNPGI_INSTANCE_NAME=pg15-1")
	bin := pluginBinary(t)
	exec1(t, ctx, pg.URL("postgres"),
		"ALTER SYSTEM SET archive_mode = 'on'",
		fmt.Sprintf("ALTER SYSTEM SET archive_command = '%s wal-archive -socket=%s -server-name=pg15 -object-store=s3 %%p'", bin, p.socket))
	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	opts.Port = pg.Port() // the plugin connects there
	if pg, err = pglocal.Start(ctx, opts); err != nil {
		t.Fatal(err)
	}
	exec1(t, ctx, pg.URL("postgres"), "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t SELECT generate_series(1, 1000)")

	bc := backup.NewBackupClient(p.conn)
	res, err := bc.Backup(ctx, &backup.BackupRequest{ClusterDefinition: cluster("pg15", map[string]string{"objectStore": "s3"}), BackupDefinition: backupDefinition("backup-1")})
	if err != nil {
		t.Fatalf("backup: %v\n%s", err, p.logs.String())
	}
	checkBackupResult(t, res)
	// A Backup's own parameters may send it to another store; the WAL it needs goes along.
	other, err := bc.Backup(ctx, &backup.BackupRequest{ClusterDefinition: cluster("pg15", map[string]string{"objectStore": "s3"}),
		BackupDefinition: backupDefinition("backup-local"), Parameters: map[string]string{"objectStore": "local", "compression": "zstd"}})
	if err != nil || other.GetMetadata()["objectStore"] != "local" || other.GetMetadata()["walCopied"] == "0" || other.GetMetadata()["compression"] != "zstd" {
		t.Fatalf("per-backup store: %v %v", other.GetMetadata(), err)
	}
	if _, err := os.Stat(filepath.Join(p.home, "store", "pg15", "base", other.GetBackupId(), "data.tar.zst")); err != nil {
		t.Fatalf("the per-backup store lacks the backup: %v", err)
	}
	_, err = bc.Backup(ctx, &backup.BackupRequest{ClusterDefinition: cluster("pg15", nil), BackupDefinition: backupDefinition("x"), Parameters: map[string]string{"bogus": "1"}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "parameters.bogus") {
		t.Fatalf("unknown backup parameter: %v", err)
	}

	exec1(t, ctx, pg.URL("postgres"), "INSERT INTO t SELECT generate_series(1001, 2000)", "SELECT pg_create_restore_point('after-2000')",
		"INSERT INTO t SELECT generate_series(2001, 3000)")
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var last string
	query(t, ctx, conn, "SELECT pg_walfile_name(pg_switch_wal())", &last)
	waitArchived(t, ctx, conn, last)

	rc := restorejob.NewRestoreJobHooksClient(p.conn)
	rres, err := rc.Restore(ctx, &restorejob.RestoreRequest{ClusterDefinition: recoveryCluster("after-2000"), CheckEmptyWalArchive: proto.Bool(true)})
	if err != nil {
		t.Fatalf("restore: %v\n%s", err, p.logs.String())
	}
	config := rres.GetRestoreConfig()
	if !strings.Contains(config, "restore_command = '"+bin+" wal-restore -socket="+p.socket) || !strings.Contains(config, "recovery_target_name = 'after-2000'") ||
		!strings.Contains(config, "-server-name=pg15") || len(rres.GetEnvs()) == 0 {
		t.Fatalf("restore config:\n%s\nenvs %q", config, rres.GetEnvs())
	}
	// Once more into the now full data directory: refused, as the operator would be told.
	if _, err := rc.Restore(ctx, &restorejob.RestoreRequest{ClusterDefinition: recoveryCluster("after-2000")}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("restore into a full PGDATA: %v", err)
	}

	// Start the restored data directory as CloudNativePG would: its configuration plus the
	// plugin's, archiving suspended.
	appendFile(t, filepath.Join(restored, "postgresql.auto.conf"), "\n"+config+"archive_mode = 'off'\n")
	pg2, err := pglocal.Start(ctx, pglocal.Options{DataDir: restored, NoSync: true})
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(restored, "postgres.log"))
		t.Fatalf("start the restored cluster: %v\n%s", err, log)
	}
	t.Cleanup(func() { _ = pg2.Stop(context.Background()) })
	conn2, err := pgx.Connect(ctx, pg2.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close(context.Background())
	waitPromoted(t, ctx, conn2)
	var rows, maxID int64
	query(t, ctx, conn2, "SELECT count(*), coalesce(max(id), 0) FROM t", &rows, &maxID)
	if rows != 2000 || maxID != 2000 {
		t.Fatalf("the restored cluster has %d rows up to %d, want exactly 2000: recovery did not stop at the restore point", rows, maxID)
	}

	maintenance(t, ctx, p, res.GetBackupId())
}

func checkBackupResult(t *testing.T, r *backup.BackupResult) {
	t.Helper()
	walRE, lsnRE := regexp.MustCompile(`^[0-9A-F]{24}$`), regexp.MustCompile(`^[0-9A-F]+/[0-9A-F]+$`)
	ok := regexp.MustCompile(`^\d{8}T\d{6}$`).MatchString(r.GetBackupId()) && r.GetBackupName() == "backup-1" &&
		r.GetStartedAt() > 0 && r.GetStoppedAt() >= r.GetStartedAt() && walRE.MatchString(r.GetBeginWal()) &&
		walRE.MatchString(r.GetEndWal()) && r.GetEndWal() >= r.GetBeginWal() && lsnRE.MatchString(r.GetBeginLsn()) &&
		lsnRE.MatchString(r.GetEndLsn()) && strings.Contains(string(r.GetBackupLabelFile()), "(file "+r.GetBeginWal()+")") &&
		r.GetInstanceId() == "pg15-1" && r.GetOnline() && len(r.GetTablespaceMapFile()) == 0
	md := r.GetMetadata()
	for _, k := range []string{"pluginName", "pluginVersion", "objectStore", "serverName", "timeline", "systemIdentifier", "compression", "size", "storedSize"} {
		ok = ok && md[k] != ""
	}
	if !ok || md["objectStore"] != "s3" || md["serverName"] != "pg15" || md["timeline"] != "1" {
		t.Fatalf("backup result %v", r)
	}
}

// maintenance runs the CLI's catalog rebuild and a dry retention run, with the plugin's
// configuration.
func maintenance(t *testing.T, ctx context.Context, p *plugin, backupID string) {
	t.Helper()
	run := func(args ...string) string {
		cmd := exec.CommandContext(ctx, pluginBinary(t), args...)
		cmd.Env = append(os.Environ(), "PLINTH_DATABASE_URL="+p.dbURL, "PLINTH_CNPGI_CONFIG="+filepath.Join(p.home, "config.yaml"),
			"TEST_S3_ACCESS_KEY_ID="+p.s3.AccessKeyID, "PLINTH_CNPGI_PLUGIN_DIR="+filepath.Join(p.home, "plugins"))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("cnpgi-plugin %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := run("catalog", "rebuild", "-object-store=s3", "-server-name=pg15")
	if !strings.Contains(out, "store s3, server pg15: WAL files added 0") || !strings.Contains(out, "backups recorded 1") {
		t.Fatalf("catalog rebuild:\n%s", out)
	}
	out = run("retention", "-object-store=s3", "-server-name=pg15", "-keep-last=1", "-dry-run")
	if !strings.Contains(out, "backups kept (1): "+backupID) || !strings.Contains(out, "first recoverability point: 20") {
		t.Fatalf("retention:\n%s", out)
	}
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// waitPromoted waits until recovery reached its target and PostgreSQL promoted itself.
func waitPromoted(t *testing.T, ctx context.Context, conn *pgx.Conn) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var inRecovery string
		query(t, ctx, conn, "SELECT pg_is_in_recovery()::text", &inRecovery)
		if inRecovery == "false" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the restored cluster is still in recovery after 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
