package instance

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
)

// TestRetentionMetadata pins the keys a Backup's result reports about the retention that
// followed it (CloudNativePG keeps them in the Backup's status).
func TestRetentionMetadata(t *testing.T) {
	keep, err := backup.ParsePolicySpec("7d,keep:5")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	cases := []struct {
		name string
		in   *backup.Retained
		want map[string]string
	}{
		{"no policy", nil, map[string]string{}},
		{"applied", &backup.Retained{Policy: keep, Report: backup.Report{Deleted: []string{"a", "b"}, WALDeleted: 7, FirstRecoverabilityPoint: at, LastSuccessful: at.Add(time.Hour)}},
			map[string]string{"retentionPolicy": keep.Spec(), "backupsDeleted": "2", "walDeleted": "7",
				"firstRecoverabilityPoint": "2026-01-02T02:04:05Z", "lastSuccessfulBackupTime": "2026-01-02T03:04:05Z"}},
		{"nothing to report", &backup.Retained{Policy: keep}, map[string]string{"retentionPolicy": keep.Spec(), "backupsDeleted": "0", "walDeleted": "0"}},
		{"failed", &backup.Retained{Policy: keep, Report: backup.Report{Deleted: []string{"a"}}, Err: errors.New("dial tcp 10.0.0.1:443: connection refused")},
			map[string]string{"retentionPolicy": keep.Spec(), "retentionError": "retention could not finish; the plugin's log has the cause"}},
	}
	for _, c := range cases {
		md := map[string]string{}
		retentionMetadata(c.in, md)
		if !maps.Equal(md, c.want) {
			t.Errorf("%s: %v, want %v", c.name, md, c.want)
		}
	}
}
