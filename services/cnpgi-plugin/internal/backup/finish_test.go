package backup_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
)

// TestFinished: which event finishing a backup raises, decided without a database.
func TestFinished(t *testing.T) {
	begin := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	end := begin.Add(time.Minute)
	actor := &eventsv1.Actor{UserId: "u1", Username: "ann"}
	rec := func(s backup.Status) backup.Record {
		return backup.Record{Store: "main", Server: "pg", ID: "20260102T030405", Name: "b1", Status: s, Timeline: 2,
			BeginWAL: "000000020000000000000004", EndWAL: "000000020000000000000005", BeginLSN: 0x4000028, EndLSN: 0x5000100,
			BeginTime: begin, EndTime: end, Size: 100, StoredSize: 40, Compression: "gzip", Instance: "pg-1", Error: "failure: disk full"}
	}
	for _, tc := range []struct {
		status backup.Status
		want   proto.Message
	}{
		{backup.StatusDone, &eventsv1.BackupCompleted{ObjectStore: "main", ServerName: "pg", BackupId: "20260102T030405", BackupName: "b1",
			Instance: "pg-1", Timeline: 2, BeginWal: "000000020000000000000004", EndWal: "000000020000000000000005",
			BeginLsn: "0/4000028", EndLsn: "0/5000100", StartedAt: timestamppb.New(begin), StoppedAt: timestamppb.New(end),
			SizeBytes: 100, StoredBytes: 40, Compression: "gzip", Actor: actor}},
		{backup.StatusFailed, &eventsv1.BackupFailed{ObjectStore: "main", ServerName: "pg", BackupId: "20260102T030405", BackupName: "b1",
			Instance: "pg-1", StartedAt: timestamppb.New(begin), FailedAt: timestamppb.New(end), Error: "failure: disk full", Actor: actor}},
		{backup.StatusStarted, nil},
		{"", nil},
	} {
		t.Run(string(tc.status), func(t *testing.T) {
			f, err := backup.Finished(rec(tc.status), actor)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("status %q finished a backup: %+v", tc.status, f)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Record != rec(tc.status) {
				t.Fatalf("record %+v", f.Record)
			}
			if !proto.Equal(f.Event.Payload, tc.want) {
				t.Fatalf("event %v, want %v", f.Event.Payload, tc.want)
			}
		})
	}
}
