package upstreamtest

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudnative-pg/cnpg-i/pkg/backup"
	"github.com/cloudnative-pg/cnpg-i/pkg/metrics"
	"github.com/cloudnative-pg/cnpg-i/pkg/wal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	cnpgiv1 "github.com/plinth-dev/plinth/libs/api/plinth/cnpgi/v1"
)

// TestCatalogService: a real PostgreSQL 15 archives its WAL through the CLI and takes a real
// base backup through the upstream Backup client; one archive call fails. Plinth's own
// CatalogService, on the same socket, then reports that server exactly as the Metrics service
// does — WAL range, last archive, the failure, the backup and the recovery window — and
// refuses bad names and unknown servers with the codes its README documents.
func TestCatalogService(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, p, opts := archivingPostgres(t, "pgc-1", "pgc", "local")
	def := cluster("pgc", map[string]string{"objectStore": "local"})

	// A failed archive call (the file is not there), counted by this process.
	missing := filepath.Join(opts.DataDir, "pg_wal", "0000000100000000000000FF")
	if _, err := wal.NewWALClient(p.conn).Archive(ctx, &wal.WALArchiveRequest{ClusterDefinition: def, SourceFileName: missing}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("archive of a missing file: %v", err)
	}
	res, err := backup.NewBackupClient(p.conn).Backup(ctx, &backup.BackupRequest{ClusterDefinition: def, BackupDefinition: backupDefinition("catalog-1")})
	if err != nil {
		t.Fatalf("backup: %v\n%s", err, p.logs.String())
	}

	c := cnpgiv1.NewCatalogServiceClient(p.conn)
	got, err := c.GetServer(ctx, &cnpgiv1.GetServerRequest{ServerName: "pgc"}) // the default store
	if err != nil {
		t.Fatal(err)
	}
	s := got.GetServer()
	w := s.GetWal()
	if s.GetObjectStore() != "local" || s.GetServerName() != "pgc" || w.GetSegments() < 1 || w.GetFirstWal() == "" ||
		w.GetLastWal() < res.GetEndWal() || w.GetFirstWal() > res.GetBeginWal() || w.GetStoredBytes() <= 0 ||
		time.Since(w.GetLastArchivedTime().AsTime()) > time.Minute || w.GetFailedArchives() != 1 ||
		time.Since(w.GetLastFailedArchiveTime().AsTime()) > time.Minute ||
		!strings.Contains(w.GetLastFailedArchiveMessage(), "does not exist") {
		t.Fatalf("WAL archive %v (backup %s..%s)", w, res.GetBeginWal(), res.GetEndWal())
	}
	if len(s.GetBaseBackups()) != 1 || s.GetCompletedBackups() != 1 {
		t.Fatalf("base backups %v", s.GetBaseBackups())
	}
	b := s.GetBaseBackups()[0]
	if b.GetBackupId() != res.GetBackupId() || b.GetBackupName() != "catalog-1" || b.GetStatus() != cnpgiv1.BackupStatus_BACKUP_STATUS_DONE ||
		b.GetStartTime().GetSeconds() != res.GetStartedAt() || b.GetEndTime().GetSeconds() != res.GetStoppedAt() ||
		b.GetBeginWal() != res.GetBeginWal() || b.GetEndWal() != res.GetEndWal() || b.GetBeginLsn() != res.GetBeginLsn() ||
		b.GetEndLsn() != res.GetEndLsn() || b.GetTimeline() != 1 || b.GetSizeBytes() <= 0 || b.GetStoredBytes() <= 0 ||
		b.GetInstance() != "pgc-1" || b.GetError() != "" {
		t.Fatalf("base backup %v, backup result %v", b, res)
	}
	rw := s.GetRecoveryWindow()
	if rw.GetStartTime().GetSeconds() != res.GetStoppedAt() || rw.GetEndWal() != w.GetLastWal() || !rw.GetEndTime().AsTime().Equal(w.GetLastArchivedTime().AsTime()) ||
		!s.GetLastSuccessfulBackupTime().AsTime().Equal(b.GetEndTime().AsTime()) || s.GetLastFailedBackupTime() != nil {
		t.Fatalf("recovery window %v, server %v", rw, s)
	}

	// The same figures as the Metrics service (the summary they share, read at the same time).
	collected, err := metrics.NewMetricsClient(p.conn).Collect(ctx, &metrics.CollectMetricsRequest{ClusterDefinition: def})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for _, x := range collected.GetMetrics() {
		m[x.GetFqName()] = x.GetValue()
	}
	// Archiving may go on in the background (archive_timeout, the backup's restore point), so
	// the catalog is read again after Collect: the figures must agree with one of the reads.
	again, err := c.GetServer(ctx, &cnpgiv1.GetServerRequest{ObjectStore: "local", ServerName: "pgc"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []*cnpgiv1.Server{s, again.GetServer()} {
		if float64(v.GetWal().GetSegments()) == m["plinth_cnpgi_archived_segments"] && float64(v.GetWal().GetStoredBytes()) == m["plinth_cnpgi_archived_bytes"] {
			goto agreed
		}
	}
	t.Fatalf("catalog %v / %v, metrics %v", s.GetWal(), again.GetServer().GetWal(), m)
agreed:
	if float64(w.GetFailedArchives()) != m["plinth_cnpgi_archive_failures_total"] || m["plinth_cnpgi_backups"] != 1 ||
		int64(m["plinth_cnpgi_first_recoverability_point"]) != rw.GetStartTime().GetSeconds() {
		t.Fatalf("catalog %v, metrics %v", s, m)
	}

	list, err := c.ListServers(ctx, &cnpgiv1.ListServersRequest{})
	if err != nil || len(list.GetServers()) != 1 {
		t.Fatalf("ListServers: %v, %v", list, err)
	}
	if l := list.GetServers()[0]; l.GetServerName() != "pgc" || l.GetObjectStore() != "local" || l.GetWal().GetSegments() < w.GetSegments() ||
		l.GetCompletedBackups() != 1 || len(l.GetBaseBackups()) != 0 || l.GetRecoveryWindow().GetStartTime().GetSeconds() != res.GetStoppedAt() {
		t.Fatalf("listed %v", l)
	}
	if other, err := c.ListServers(ctx, &cnpgiv1.ListServersRequest{ObjectStore: "s3"}); err != nil || len(other.GetServers()) != 0 {
		t.Fatalf("ListServers of s3: %v, %v", other, err)
	}

	for _, tc := range []struct {
		req   *cnpgiv1.GetServerRequest
		code  codes.Code
		field string
	}{
		{&cnpgiv1.GetServerRequest{}, codes.InvalidArgument, "server_name"},
		{&cnpgiv1.GetServerRequest{ServerName: "../etc"}, codes.InvalidArgument, "server_name"},
		{&cnpgiv1.GetServerRequest{ServerName: strings.Repeat("x", 1<<20)}, codes.InvalidArgument, "server_name"},
		{&cnpgiv1.GetServerRequest{ServerName: "pgc", ObjectStore: "Not A Store"}, codes.InvalidArgument, "object_store"},
		{&cnpgiv1.GetServerRequest{ServerName: "nobody"}, codes.NotFound, "nobody"},
		{&cnpgiv1.GetServerRequest{ServerName: "pgc", ObjectStore: "s3"}, codes.NotFound, "pgc"},
	} {
		_, err := c.GetServer(ctx, tc.req)
		if st := status.Convert(err); st.Code() != tc.code || !strings.Contains(st.Message(), tc.field) || len(st.Message()) > 512 {
			t.Errorf("GetServer(%.40v): %v, want %v naming %s", tc.req, err, tc.code, tc.field)
		}
	}
	if _, err := c.ListServers(ctx, &cnpgiv1.ListServersRequest{ObjectStore: "bad\x00"}); status.Code(err) != codes.InvalidArgument ||
		!strings.Contains(err.Error(), "object_store") {
		t.Errorf("ListServers with a NUL store: %v", err)
	}
}
