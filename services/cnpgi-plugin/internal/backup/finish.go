package backup

import (
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
)

// Finish is what finishing a backup writes, in one transaction: its final record and the
// event announcing it. The catalog writes exactly this (Catalog.FinishBackup); Finished
// decides it.
type Finish struct {
	Record Record
	Event  events.Event
}

// Finished decides what finishing the backup r records: plinth.cnpgi.backup.completed for
// DONE, .failed for FAILED, so that the event is published if and only if the catalog says
// the backup is done or failed. Any other status is an error: a backup still running
// announces nothing. actor is the Plinth user who asked for the backup through the gateway,
// nil for CloudNativePG's operator.
func Finished(r Record, actor *eventsv1.Actor) (Finish, error) {
	switch r.Status {
	case StatusDone:
		return Finish{Record: r, Event: events.Event{Payload: &eventsv1.BackupCompleted{
			ObjectStore: r.Store, ServerName: r.Server, BackupId: r.ID, BackupName: r.Name, Instance: r.Instance,
			Timeline: r.Timeline, BeginWal: r.BeginWAL, EndWal: r.EndWAL, BeginLsn: r.BeginLSN.String(), EndLsn: r.EndLSN.String(),
			StartedAt: timestamppb.New(r.BeginTime), StoppedAt: timestamppb.New(r.EndTime),
			SizeBytes: r.Size, StoredBytes: r.StoredSize, Compression: string(r.Compression), Actor: actor,
		}}}, nil
	case StatusFailed:
		return Finish{Record: r, Event: events.Event{Payload: &eventsv1.BackupFailed{
			ObjectStore: r.Store, ServerName: r.Server, BackupId: r.ID, BackupName: r.Name, Instance: r.Instance,
			StartedAt: timestamppb.New(r.BeginTime), FailedAt: timestamppb.New(r.EndTime), Error: r.Error, Actor: actor,
		}}}, nil
	}
	return Finish{}, fmt.Errorf("finish backup %s: status %q is not final (DONE or FAILED)", r.ID, r.Status)
}
