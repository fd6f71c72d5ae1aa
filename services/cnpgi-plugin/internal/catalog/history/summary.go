package history

import (
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
)

// Backup is a base backup as a summary counts it.
type Backup struct {
	Status backup.Status
	// End is when it ended (zero when unknown); Updated when its record last changed.
	End, Updated time.Time
}

// WithBackups is s with its server's base backups counted: the completed ones; the first
// recoverability point, the end of the oldest completed backup (the earliest moment a
// recovery can reach); the newest completed backup's end; the newest failed backup's end
// (when it has none, the last change of its record: it failed then at the latest). A backup
// still running counts for nothing.
func (s Summary) WithBackups(backups []Backup) Summary {
	for _, b := range backups {
		switch b.Status {
		case backup.StatusDone:
			s.Backups++
			if b.End.IsZero() {
				continue
			}
			if s.FirstRecoverabilityPoint.IsZero() || b.End.Before(s.FirstRecoverabilityPoint) {
				s.FirstRecoverabilityPoint = b.End
			}
			if b.End.After(s.LastSuccessfulBackup) {
				s.LastSuccessfulBackup = b.End
			}
		case backup.StatusFailed:
			end := b.End
			if end.IsZero() {
				end = b.Updated
			}
			if end.After(s.LastFailedBackup) {
				s.LastFailedBackup = end
			}
		}
	}
	return s
}
