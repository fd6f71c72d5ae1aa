package events

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
)

// BackupFinished is the event announcing a backup's final record: completed for DONE,
// failed for FAILED; false for any other status (a backup still running announces nothing).
// actor is the Plinth user who asked for the backup through the gateway, nil for
// CloudNativePG's operator.
func BackupFinished(r backup.Record, actor *eventsv1.Actor) (events.Event, bool) {
	switch r.Status {
	case backup.StatusDone:
		ev := &eventsv1.BackupCompleted{
			ObjectStore: r.Store, ServerName: r.Server, BackupId: r.ID, BackupName: r.Name, Instance: r.Instance,
			Timeline: r.Timeline, BeginWal: r.BeginWAL, EndWal: r.EndWAL, BeginLsn: r.BeginLSN.String(), EndLsn: r.EndLSN.String(),
			StartedAt: timestamppb.New(r.BeginTime), StoppedAt: timestamppb.New(r.EndTime),
			SizeBytes: r.Size, StoredBytes: r.StoredSize, Compression: string(r.Compression), Actor: actor,
		}
		return events.Event{Payload: ev}, true
	case backup.StatusFailed:
		ev := &eventsv1.BackupFailed{
			ObjectStore: r.Store, ServerName: r.Server, BackupId: r.ID, BackupName: r.Name, Instance: r.Instance,
			StartedAt: timestamppb.New(r.BeginTime), FailedAt: timestamppb.New(r.EndTime), Error: r.Error, Actor: actor,
		}
		return events.Event{Payload: ev}, true
	}
	return events.Event{}, false
}
