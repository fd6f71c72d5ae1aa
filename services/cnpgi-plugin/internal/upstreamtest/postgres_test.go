package upstreamtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// TestPostgresArchivesThroughTheCLI: a real PostgreSQL with archive_command = our
// wal-archive archives its WAL into the S3 store (maxParallel 4, so segments are also
// shipped ahead of PostgreSQL's calls) after pg_switch_wal(); wal-restore then returns
// every archived segment byte-identical to the one in pg_wal.
func TestPostgresArchivesThroughTheCLI(t *testing.T) {
	t.Parallel()
	if _, err := pglocal.FindBinaries(); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	p := startPlugin(t, 4)
	bin := pluginBinary(t)
	ctx := ctxT(t)
	opts := pglocal.Options{DataDir: filepath.Join(p.home, "pgdata"), NoSync: true}
	pg, err := pglocal.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	flags := fmt.Sprintf("-socket=%s -server-name=pg15 -object-store=s3", p.socket)
	exec1(t, ctx, pg.URL("postgres"),
		"ALTER SYSTEM SET archive_mode = 'on'",
		fmt.Sprintf("ALTER SYSTEM SET archive_command = '%s wal-archive %s %%p'", bin, flags),
		"ALTER SYSTEM SET wal_keep_size = '1GB'") // keep every segment in pg_wal to compare with
	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if pg, err = pglocal.Start(ctx, opts); err != nil { // archive_mode needs a restart
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var first, last, sysID string
	query(t, ctx, conn, "SELECT pg_walfile_name(pg_current_wal_lsn()), system_identifier::text FROM pg_control_system()", &first, &sysID)
	query(t, ctx, conn, "CREATE TABLE t (x int)")
	for i := range 6 {
		query(t, ctx, conn, fmt.Sprintf("INSERT INTO t SELECT generate_series(1, %d)", 1000*(i+1)))
		query(t, ctx, conn, "SELECT pg_walfile_name(pg_switch_wal())", &last)
	}
	waitArchived(t, ctx, conn, last)

	names := segmentRange(t, first, last)
	dir := p.owner.mkdir(t, filepath.Join(p.home, "restored")) // the plugin writes there
	for _, name := range names {
		dest := filepath.Join(dir, name)
		out, err := exec.CommandContext(ctx, bin, "wal-restore", "-socket="+p.socket, "-server-name=pg15", "-object-store=s3", name, dest).CombinedOutput()
		if err != nil {
			t.Fatalf("wal-restore %s: %v\n%s", name, err, out)
		}
		want, err := os.ReadFile(filepath.Join(opts.DataDir, "pg_wal", name))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(dest); !bytes.Equal(got, want) {
			t.Fatalf("restored %s differs from pg_wal's (%d vs %d bytes)", name, len(got), len(want))
		}
	}
	missing := "0000000100000000000000F0"
	out, err := exec.CommandContext(ctx, bin, "wal-restore", "-socket="+p.socket, "-server-name=pg15", "-object-store=s3", missing, filepath.Join(dir, "x")).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "not found in the archive (NotFound)") {
		t.Fatalf("restore of a missing segment: %v %q, want exit status 1 and NotFound", err, out)
	}

	// The objects are where barman-cloud puts them, zstd-compressed as the store says; the
	// catalog holds the cluster's system identifier read from each segment's header.
	for _, name := range names {
		key := "plinth/pg15/wals/" + name[:16] + "/" + name + ".zst"
		if _, err := p.s3.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(key)}); err != nil {
			t.Fatalf("object %s: %v", key, err)
		}
	}
	cat, err := pgx.Connect(ctx, p.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close(context.Background())
	var n int
	query(t, ctx, cat, "SELECT count(*) FROM wal_files WHERE server = 'pg15' AND kind = 'segment' AND system_identifier::text = $1", &n, sysID)
	if n < len(names) {
		t.Fatalf("%d catalogued segments carry system identifier %s, want at least %d", n, sysID, len(names))
	}
}

// waitArchived waits until PostgreSQL reports last as archived, failing on any failure.
func waitArchived(t *testing.T, ctx context.Context, conn *pgx.Conn, last string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var archived, failed string
		var failures int64
		query(t, ctx, conn, "SELECT coalesce(last_archived_wal, ''), coalesce(last_failed_wal, ''), failed_count FROM pg_stat_archiver",
			&archived, &failed, &failures)
		if failures > 0 {
			t.Fatalf("archive_command failed %d times (last on %s)", failures, failed)
		}
		if archived >= last {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("PostgreSQL archived up to %q, want %s", archived, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// segmentRange lists the segment names from first to last on one timeline (16 MiB
// segments, as initdb makes them).
func segmentRange(t *testing.T, first, last string) []string {
	t.Helper()
	var names []string
	var tli, log, seg uint32
	if _, err := fmt.Sscanf(first, "%08X%08X%08X", &tli, &log, &seg); err != nil {
		t.Fatal(err)
	}
	for {
		name := fmt.Sprintf("%08X%08X%08X", tli, log, seg)
		names = append(names, name)
		if name >= last {
			return names
		}
		if seg++; seg == 0x100 {
			log, seg = log+1, 0
		}
	}
}

func exec1(t *testing.T, ctx context.Context, url string, stmts ...string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// query runs sql and scans the first row into dst (if any), args after the pointers.
func query(t *testing.T, ctx context.Context, conn *pgx.Conn, sql string, dstAndArgs ...any) {
	t.Helper()
	var dst, args []any
	for _, v := range dstAndArgs {
		switch v.(type) {
		case *string, *int, *int64:
			dst = append(dst, v)
		default:
			args = append(args, v)
		}
	}
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	if rows.Next() && len(dst) > 0 {
		if err := rows.Scan(dst...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
