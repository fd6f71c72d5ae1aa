package events_test

import (
	"slices"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/events"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// TestDue: a server is announced with a full batch or once its oldest file has waited the
// interval (or when all are asked for), in the order given; no database.
func TestDue(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	b := func(server string, files int, waited time.Duration) events.Backlog {
		return events.Backlog{Store: "main", Server: server, Files: files, Oldest: now.Add(-waited)}
	}
	for _, tc := range []struct {
		name    string
		pending []events.Backlog
		all     bool
		want    []string
	}{
		{"nothing waits", nil, false, nil},
		{"a young small batch waits", []events.Backlog{b("a", 2, time.Second)}, false, nil},
		{"a full batch goes at once", []events.Backlog{b("a", 3, 0)}, false, []string{"a"}},
		{"more than a batch goes", []events.Backlog{b("a", 40, 0)}, false, []string{"a"}},
		{"a file that waited the interval goes alone", []events.Backlog{b("a", 1, 10*time.Second)}, false, []string{"a"}},
		{"just younger than the interval waits", []events.Backlog{b("a", 1, 10*time.Second-time.Millisecond)}, false, nil},
		{"all takes everything", []events.Backlog{b("a", 1, 0), b("b", 2, time.Second)}, true, []string{"a", "b"}},
		{"order is kept, young ones skipped", []events.Backlog{b("c", 1, time.Minute), b("a", 1, 0), b("b", 5, 0)}, false, []string{"c", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, d := range events.Due(tc.pending, 3, 10*time.Second, now, tc.all) {
				got = append(got, d.Server)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("due %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWALArchived: one batch's event — names in WAL order, segments counted by kind, sizes
// summed, the span of archiving — whatever order the files come in.
func TestWALArchived(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	files := []wal.ArchivedFile{
		{Store: "main", Server: "pg", Name: "000000010000000000000003", Kind: wal.KindSegment, Size: 16, StoredSize: 4, ArchivedAt: at.Add(2 * time.Second)},
		{Store: "main", Server: "pg", Name: "00000002.history", Kind: wal.KindHistory, Size: 1, StoredSize: 1, ArchivedAt: at},
		{Store: "main", Server: "pg", Name: "000000010000000000000002.00000028.backup", Kind: wal.KindBackup, Size: 2, StoredSize: 2, ArchivedAt: at.Add(time.Second)},
		{Store: "main", Server: "pg", Name: "000000010000000000000002", Kind: wal.KindSegment, Size: 16, StoredSize: 5, ArchivedAt: at.Add(time.Second)},
	}
	ev := events.WALArchived(files)
	want := []string{"000000010000000000000002", "000000010000000000000002.00000028.backup", "000000010000000000000003", "00000002.history"}
	if !slices.Equal(ev.GetWalNames(), want) {
		t.Fatalf("names %v, want %v", ev.GetWalNames(), want)
	}
	if ev.GetObjectStore() != "main" || ev.GetServerName() != "pg" || ev.GetSegments() != 2 || ev.GetSizeBytes() != 35 || ev.GetStoredBytes() != 12 {
		t.Fatalf("event %v", ev)
	}
	if !ev.GetFirstArchivedAt().AsTime().Equal(at) || !ev.GetLastArchivedAt().AsTime().Equal(at.Add(2*time.Second)) {
		t.Fatalf("span %v – %v", ev.GetFirstArchivedAt().AsTime(), ev.GetLastArchivedAt().AsTime())
	}
}
