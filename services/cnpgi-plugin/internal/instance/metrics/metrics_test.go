package metrics

import (
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/history"
)

func TestCollectFollowsDefinitions(t *testing.T) {
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	s := history.Summary{
		Segments: 10, StoredBytes: 4096, LastArchivedAt: now.Add(-90 * time.Second), Backups: 2,
		FirstRecoverabilityPoint: time.Unix(1000, 0), LastSuccessfulBackup: time.Unix(2000, 0),
	}
	defs, samples := Definitions(), Collect(s, 3, now, "s3", "pg")
	if len(defs) != len(samples) {
		t.Fatalf("%d definitions, %d samples", len(defs), len(samples))
	}
	want := map[string]float64{
		"plinth_cnpgi_first_recoverability_point": 1000, "plinth_cnpgi_last_successful_backup_timestamp": 2000,
		"plinth_cnpgi_last_failed_backup_timestamp": 0, "plinth_cnpgi_backups": 2, "plinth_cnpgi_archived_segments": 10,
		"plinth_cnpgi_archived_bytes": 4096, "plinth_cnpgi_archive_failures_total": 3,
		"plinth_cnpgi_last_archived_timestamp": float64(now.Add(-90 * time.Second).Unix()), "plinth_cnpgi_archive_lag_seconds": 90,
	}
	for i, d := range defs {
		if d.Type != Counter && d.Type != Gauge || len(d.Labels) != 2 || d.Help == "" {
			t.Errorf("definition %+v", d)
		}
		sm := samples[i]
		if sm.Name != d.Name || len(sm.LabelValues) != len(d.Labels) || sm.LabelValues[0] != "s3" || sm.LabelValues[1] != "pg" {
			t.Errorf("sample %+v for %s", sm, d.Name)
		}
		if v, ok := want[sm.Name]; !ok || v != sm.Value {
			t.Errorf("%s = %v, want %v", sm.Name, sm.Value, v)
		}
	}
	for _, sm := range Collect(history.Summary{}, 0, now, "s", "p") {
		if sm.Value != 0 {
			t.Errorf("empty archive: %s = %v, want 0", sm.Name, sm.Value)
		}
	}
}

func TestFailuresCountPerServer(t *testing.T) {
	var f Failures
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { f.Add("s3", "pg", time.Unix(100, 0), "older") })
	}
	wg.Wait()
	f.Add("s3", "pg", time.Unix(200, 0), "newest")
	f.Add("s3", "pg", time.Unix(150, 0), "late but older")
	f.Add("s3", "other", time.Unix(100, 0), "x")
	if f.Count("s3", "pg") != 52 || f.Count("s3", "other") != 1 || f.Count("local", "pg") != 0 {
		t.Fatalf("counts %d %d %d", f.Count("s3", "pg"), f.Count("s3", "other"), f.Count("local", "pg"))
	}
	if got := f.Get("s3", "pg"); !got.Last.Equal(time.Unix(200, 0)) || got.Message != "newest" {
		t.Fatalf("last failure %+v", got)
	}
	if got := f.Get("local", "pg"); got != (Failure{}) {
		t.Fatalf("no failure: %+v", got)
	}
}
