package history_test

import (
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/history"
)

// TestWithBackups: the recovery window and the backup figures of a summary, without a database.
func TestWithBackups(t *testing.T) {
	t0 := time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)
	h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
	wal := history.Summary{Segments: 3, StoredBytes: 30, FirstWAL: "a", LastWAL: "c", LastArchivedAt: h(9)}
	for _, tc := range []struct {
		name    string
		backups []history.Backup
		want    history.Summary
	}{
		{"none", nil, wal},
		{"completed: the oldest's end opens the window, the newest's is the last success", []history.Backup{
			{Status: backup.StatusDone, End: h(2)}, {Status: backup.StatusDone, End: h(1)}, {Status: backup.StatusDone, End: h(3)},
		}, history.Summary{Segments: 3, StoredBytes: 30, FirstWAL: "a", LastWAL: "c", LastArchivedAt: h(9),
			Backups: 3, FirstRecoverabilityPoint: h(1), LastSuccessfulBackup: h(3)}},
		{"a running backup counts for nothing, a failed one only as the last failure", []history.Backup{
			{Status: backup.StatusStarted, Updated: h(5)}, {Status: backup.StatusFailed, End: h(4), Updated: h(6)},
			{Status: backup.StatusFailed, End: h(2)}, {Status: backup.StatusDone, End: h(3)},
		}, history.Summary{Segments: 3, StoredBytes: 30, FirstWAL: "a", LastWAL: "c", LastArchivedAt: h(9),
			Backups: 1, FirstRecoverabilityPoint: h(3), LastSuccessfulBackup: h(3), LastFailedBackup: h(4)}},
		{"a failed backup without an end failed when its record last changed", []history.Backup{
			{Status: backup.StatusFailed, Updated: h(7)}, {Status: backup.StatusFailed, End: h(6)},
		}, history.Summary{Segments: 3, StoredBytes: 30, FirstWAL: "a", LastWAL: "c", LastArchivedAt: h(9), LastFailedBackup: h(7)}},
		{"a completed backup without an end is counted, not placed", []history.Backup{{Status: backup.StatusDone}},
			history.Summary{Segments: 3, StoredBytes: 30, FirstWAL: "a", LastWAL: "c", LastArchivedAt: h(9), Backups: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wal.WithBackups(tc.backups); got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
