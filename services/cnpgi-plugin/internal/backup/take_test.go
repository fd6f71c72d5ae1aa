package backup_test

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

// tarEntries reads an archive's entry names in order, with the bytes of the small files.
func tarEntries(t *testing.T, st *stores.Named, a backup.Archive) ([]string, map[string][]byte) {
	t.Helper()
	r, err := backup.OpenArchive(ctxT(t), st, a)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var names []string
	small := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names, small
		}
		if err != nil {
			t.Fatalf("%s: %v", a.Key, err)
		}
		names = append(names, h.Name)
		if h.Size < 64<<10 {
			small[h.Name], _ = io.ReadAll(tr)
		}
	}
}

// TestTakeBackup takes online backups of a real PostgreSQL 15 into a POSIX and an S3 store
// and checks what they hold: barman's layout and backup.info, every tablespace, the
// exclusions, backup_label and tablespace_map last, the WAL range, the catalog.
func TestTakeBackup(t *testing.T) {
	in := startInstance(t)
	offsite, srv, bucket := s3Store(t, "offsite")
	var unlogged string
	in.query(t, "SELECT pg_relation_filepath('u')", &unlogged)
	for _, target := range []*stores.Named{in.archive, offsite} {
		t.Run(target.Name, func(t *testing.T) {
			ctx := ctxT(t)
			res, err := in.svc.Take(ctx, backup.Request{
				Target: backup.Target{Store: target, Server: "pg"}, WALStore: in.archive, Name: "nightly",
				Instance: "pg-1", ImmediateCheckpoint: true, WaitForArchive: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			info := res.Info
			if info.Status != backup.StatusDone || info.Timeline != 1 || info.BeginWAL == "" || info.EndWAL < info.BeginWAL ||
				info.EndLSN <= info.BeginLSN || !strings.Contains(info.Label, "(file "+info.BeginWAL+")") || res.TablespaceMap == "" {
				t.Fatalf("result %+v", info)
			}
			backups, err := backup.List(ctx, target.Store, "pg")
			if err != nil || len(backups) != 1 || !backups[0].Usable() || len(backups[0].Missing()) != 0 {
				t.Fatalf("listing %+v %v", backups, err)
			}
			b := backups[0]
			if b.Info.EndWAL != info.EndWAL || b.Info.Name != "nightly" || len(b.Info.Tablespaces) != 1 || b.Info.Tablespaces[0].Location != in.tbsDir {
				t.Fatalf("stored backup.info %+v", b.Info)
			}
			data := b.Archives[slices.IndexFunc(b.Archives, func(a backup.Archive) bool { return a.Base == "data" })]
			names, files := tarEntries(t, target, data)
			n := len(names)
			if n < 100 || names[n-3] != "global/pg_control" || names[n-2] != "backup_label" || names[n-1] != "tablespace_map" {
				t.Fatalf("PGDATA archive ends with %q", names[max(0, n-4):])
			}
			if string(files["backup_label"]) != info.Label || string(files["tablespace_map"]) != res.TablespaceMap {
				t.Fatal("backup_label or tablespace_map differ from pg_backup_stop's")
			}
			for _, absent := range []string{"postmaster.pid", "postmaster.opts", unlogged, "pg_tblspc/" + fmt.Sprint(b.Info.Tablespaces[0].OID)} {
				if slices.Contains(names, absent) {
					t.Errorf("%s is in the backup", absent)
				}
			}
			for _, present := range []string{"PG_VERSION", "postgresql.conf", unlogged + "_init", "pg_wal/", "pg_wal/archive_status/", "pg_stat_tmp/"} {
				if !slices.Contains(names, present) {
					t.Errorf("%s is missing from the backup", present)
				}
			}
			for _, name := range names {
				if strings.HasPrefix(name, "pg_wal/0") {
					t.Errorf("WAL segment %s is in the backup", name)
				}
			}
			tbs := b.Archives[slices.IndexFunc(b.Archives, func(a backup.Archive) bool { return a.Base != "data" })]
			tnames, _ := tarEntries(t, target, tbs)
			if len(tnames) < 2 || !strings.HasPrefix(tnames[0], "PG_15_") {
				t.Fatalf("tablespace archive holds %q", tnames)
			}
			recs, err := in.catalog.Backups(ctx, target.Name, "pg")
			if err != nil || len(recs) != 1 || recs[0].Status != backup.StatusDone || recs[0].EndLSN != info.EndLSN ||
				recs[0].StoredSize != res.StoredSize || recs[0].Size != info.Size || recs[0].Instance != "pg-1" {
				t.Fatalf("catalog %+v %v", recs, err)
			}
			// A backup in another store than the WAL archive carries the WAL it needs.
			if target == offsite && res.WALCopied == 0 || target != offsite && res.WALCopied != 0 {
				t.Fatalf("%d WAL files copied into %s", res.WALCopied, target.Name)
			}
			if target == offsite {
				key := "pg/wals/" + info.EndWAL[:16] + "/" + info.EndWAL + ".gz"
				if _, err := offsite.Store.Stat(ctx, key); err != nil {
					t.Fatalf("the backup's last WAL segment was not copied: %v", err)
				}
				barmanListsAndRestores(t, srv.Endpoint, srv.AccessKeyID, srv.SecretAccessKey, bucket, info)
			}
		})
	}
}

// barmanListsAndRestores runs barman's own tools against our backup in S3.
func barmanListsAndRestores(t *testing.T, endpoint, key, secret, bucket string, info *backup.Info) {
	t.Helper()
	if _, err := exec.LookPath("barman-cloud-backup-list"); err != nil {
		testenv.SkipOrFail(t, "barman-cloud-backup-list not found: apt-get install barman-cli-cloud")
	}
	env := append(os.Environ(), "AWS_ACCESS_KEY_ID="+key, "AWS_SECRET_ACCESS_KEY="+secret, "AWS_DEFAULT_REGION=us-east-1")
	run := func(args ...string) string {
		cmd := exec.CommandContext(ctxT(t), args[0], args[1:]...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	url := "s3://" + bucket + "/plinth"
	list := run("barman-cloud-backup-list", "--endpoint-url", endpoint, url, "pg")
	if !strings.Contains(list, info.ID) || !strings.Contains(list, info.BeginWAL) || !strings.Contains(list, "nightly") {
		t.Fatalf("barman-cloud-backup-list does not show our backup:\n%s", list)
	}
	dest := filepath.Join(t.TempDir(), "restored")
	tbs := filepath.Join(t.TempDir(), "tbs")
	run("barman-cloud-restore", "--endpoint-url", endpoint, "--tablespace", info.Tablespaces[0].Name+":"+tbs, url, "pg", info.ID, dest)
	label, err := os.ReadFile(filepath.Join(dest, "backup_label"))
	if err != nil || string(label) != info.Label {
		t.Fatalf("barman-cloud-restore's backup_label: %q %v", label, err)
	}
	for _, p := range []string{filepath.Join(dest, "global", "pg_control"), tbs} {
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
	}
}

// failingPuts is a store whose uploads of tar archives fail midway.
type failingPuts struct{ objectstore.Store }

func (f failingPuts) Put(ctx context.Context, key string, r io.Reader, o objectstore.PutOptions) error {
	if strings.Contains(key, ".tar") {
		_, _ = io.CopyN(io.Discard, r, 1<<20)
		return errors.New("connection reset by peer")
	}
	return f.Store.Put(ctx, key, r, o)
}

// TestTakeRecordsFailures: a backup whose upload fails is recorded as FAILED, in the store
// (backup.info, as barman does) and the catalog, and ends the backup on the instance; an
// unreachable instance is Unavailable.
func TestTakeRecordsFailures(t *testing.T) {
	in := startInstance(t)
	ctx := ctxT(t)
	flaky := &stores.Named{Name: "flaky", Kind: "posix", Store: failingPuts{in.archive.Store}}
	// A backup asked for through the gateway, which names the verified caller in these headers.
	viaGateway := metadata.NewIncomingContext(ctx, metadata.Pairs("plinth-account-id", "7d3f9c2a-1b4e-4f6a-8c5d-2e9b0a1c3d4f", "plinth-account-name", "ops"))
	_, err := in.svc.Take(viaGateway, backup.Request{Target: backup.Target{Store: flaky, Server: "pg"}, ImmediateCheckpoint: true})
	if err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("backup through failing uploads: %v", err)
	}
	recs, err := in.catalog.Backups(ctx, "flaky", "pg")
	if err != nil || len(recs) != 1 || recs[0].Status != backup.StatusFailed || !strings.Contains(recs[0].Error, "connection reset") || recs[0].EndTime.IsZero() {
		t.Fatalf("catalog after a failure: %+v %v", recs, err)
	}
	listed, err := backup.List(ctx, in.archive.Store, "pg")
	if err != nil || len(listed) != 1 || listed[0].Info == nil || listed[0].Info.Status != backup.StatusFailed || listed[0].Usable() {
		t.Fatalf("store after a failure: %+v %v", listed, err)
	}
	// The failure is announced through the outbox, written with the FAILED record.
	var payload []byte
	if err := in.pool.QueryRow(ctx, `SELECT payload FROM outbox WHERE subject = 'plinth.cnpgi.backup.failed' AND type = 'plinth.events.v1.BackupFailed'`).Scan(&payload); err != nil {
		t.Fatalf("no backup.failed event in the outbox: %v", err)
	}
	failed := &eventsv1.BackupFailed{}
	if err := proto.Unmarshal(payload, failed); err != nil || failed.GetBackupId() != recs[0].ID || failed.GetObjectStore() != "flaky" ||
		failed.GetServerName() != "pg" || !strings.Contains(failed.GetError(), "connection reset") || !failed.GetFailedAt().AsTime().Equal(recs[0].EndTime) ||
		failed.GetActor().GetUserId() != "7d3f9c2a-1b4e-4f6a-8c5d-2e9b0a1c3d4f" || failed.GetActor().GetUsername() != "ops" {
		t.Fatalf("backup.failed event %v %v", failed, err)
	}
	// The session that held the failed backup is gone: another backup starts at once.
	if ok, err := in.svc.Take(ctx, backup.Request{Target: backup.Target{Store: in.archive, Server: "pg"}, ImmediateCheckpoint: true}); err != nil {
		t.Fatalf("backup after a failed one: %v", err)
	} else {
		rows, err := in.pool.Query(ctx, `SELECT payload FROM outbox WHERE subject = 'plinth.cnpgi.backup.completed'`)
		if err != nil {
			t.Fatal(err)
		}
		payloads, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		n := 0
		for _, p := range payloads {
			ev := &eventsv1.BackupCompleted{}
			if err := proto.Unmarshal(p, ev); err != nil {
				t.Fatal(err)
			}
			if ev.GetBackupId() == ok.Info.ID && ev.GetObjectStore() == in.archive.Name {
				n++
				if ev.GetEndWal() != ok.Info.EndWAL || ev.GetEndLsn() != ok.Info.EndLSN.String() || ev.GetTimeline() != 1 || ev.GetStoredBytes() != ok.StoredSize ||
					ev.GetActor() != nil { // CloudNativePG's operator's call names nobody
					t.Fatalf("backup.completed event %v", ev)
				}
			}
		}
		if err != nil || n != 1 {
			t.Fatalf("backup.completed events for %s: %d %v", ok.Info.ID, n, err)
		}
	}
	down := backup.NewService(in.catalog, backup.Options{InstanceURL: "postgres://postgres@127.0.0.1:1/postgres?connect_timeout=2"})
	_, err = down.Take(ctx, backup.Request{Target: backup.Target{Store: in.archive, Server: "pg"}})
	var be *backup.Error
	if !errors.As(err, &be) || be.Kind != backup.KindUnavailable {
		t.Fatalf("unreachable instance: %v", err)
	}
}
