package upstreamtest

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cloudnative-pg/cnpg-i/pkg/backup"
)

// TestRetentionAfterBackup: a cluster with retentionPolicy keep:2 takes three real base
// backups through the upstream Backup client; the third applies the policy, deleting the
// first backup from the store and reporting the recovery window in the result's metadata.
func TestRetentionAfterBackup(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, p, _ := archivingPostgres(t, "pgr-1", "pgr", "local")

	def := cluster("pgr", map[string]string{"objectStore": "local", "retentionPolicy": "keep:2"})
	bc := backup.NewBackupClient(p.conn)
	var results []*backup.BackupResult
	for i := 1; i <= 3; i++ {
		res, err := bc.Backup(ctx, &backup.BackupRequest{ClusterDefinition: def, BackupDefinition: backupDefinition(fmt.Sprintf("b%d", i))})
		if err != nil {
			t.Fatalf("backup %d: %v\n%s", i, err, p.logs.String())
		}
		results = append(results, res)
	}
	first, second, third := results[0].GetMetadata(), results[1].GetMetadata(), results[2].GetMetadata()
	if first["retentionPolicy"] != "keep:2" || first["backupsDeleted"] != "0" || second["backupsDeleted"] != "0" {
		t.Fatalf("retention after the first two backups: %v / %v", first, second)
	}
	if third["backupsDeleted"] != "1" || third["retentionError"] != "" || third["lastSuccessfulBackupTime"] == "" {
		t.Fatalf("retention after the third backup: %v\n%s", third, p.logs.String())
	}
	// The recovery window now starts at the end of the second backup.
	frp, err := time.Parse(time.RFC3339, third["firstRecoverabilityPoint"])
	if err != nil || frp.Unix() != results[1].GetStoppedAt() {
		t.Fatalf("first recoverability point %q (%v), want the second backup's end %d", third["firstRecoverabilityPoint"], err, results[1].GetStoppedAt())
	}
	// A POSIX store may leave the deleted backup's empty directory; what counts is its files.
	base := filepath.Join(p.home, "store", "pgr", "base")
	for i, r := range results {
		files, _ := filepath.Glob(filepath.Join(base, r.GetBackupId(), "*"))
		if kept := len(files) > 0; kept != (i > 0) {
			t.Fatalf("backup %d (%s) in the store: %v, want only the last two kept", i+1, r.GetBackupId(), files)
		}
	}
	// A policy the plugin cannot apply is refused before any backup is taken.
	_, err = bc.Backup(ctx, &backup.BackupRequest{ClusterDefinition: cluster("pgr", map[string]string{"objectStore": "local", "retentionPolicy": "keep:0"}),
		BackupDefinition: backupDefinition("bad")})
	if err == nil {
		t.Fatal("a backup with an invalid retention policy was taken")
	}
}
