// Package metrics defines the metrics the plugin hands to CloudNativePG's instance manager,
// which exports them with PostgreSQL's own (CNPG-I Metrics): the recovery window, the archive's
// size and how far it lags, and failed archive calls.
package metrics

import (
	"sync"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/history"
)

// Type is a metric's Prometheus type; the numbers are CNPG-I's (and prometheus.ValueType's).
type Type int

const (
	// Counter only grows (until the process restarts).
	Counter Type = 1
	// Gauge goes up and down.
	Gauge Type = 2
)

// Definition describes one metric.
type Definition struct {
	Name, Help string
	Type       Type
	Labels     []string
}

// Sample is one value of a metric for the given label values.
type Sample struct {
	Name        string
	Value       float64
	LabelValues []string
}

const prefix = "plinth_cnpgi_"

// Definitions lists every metric, in the order Collect returns them.
func Definitions() []Definition {
	// Store and server are variable labels, not constant ones: the instance manager defines
	// the metrics once, while they come from the Cluster at each collection.
	d := func(name, help string, t Type) Definition {
		return Definition{Name: prefix + name, Help: help, Type: t, Labels: []string{"object_store", "server_name"}}
	}
	return []Definition{
		d("first_recoverability_point", "Unix time of the earliest point a recovery from the archive can reach (end of the oldest completed base backup); 0 without one.", Gauge),
		d("last_successful_backup_timestamp", "Unix time the newest completed base backup ended; 0 without one.", Gauge),
		d("last_failed_backup_timestamp", "Unix time the newest failed base backup ended; 0 without one.", Gauge),
		d("backups", "Completed base backups in the archive.", Gauge),
		d("archived_segments", "WAL segments in the archive (the catalog's count; retention lowers it).", Gauge),
		d("archived_bytes", "Bytes the archived WAL files take in the object store.", Gauge),
		d("archive_failures_total", "WAL archive calls that failed since the plugin started.", Counter),
		d("last_archived_timestamp", "Unix time the newest WAL file was archived; 0 without one.", Gauge),
		d("archive_lag_seconds", "Seconds since the newest WAL file was archived; 0 without one. With archive_timeout set, a value well above it means archiving is stuck.", Gauge),
	}
}

// Collect turns a server's summary and failure count into samples, in Definitions' order.
func Collect(s history.Summary, failures uint64, now time.Time, store, server string) []Sample {
	lag := 0.0
	if !s.LastArchivedAt.IsZero() {
		lag = max(0, now.Sub(s.LastArchivedAt).Seconds())
	}
	values := []float64{
		unix(s.FirstRecoverabilityPoint), unix(s.LastSuccessfulBackup), unix(s.LastFailedBackup),
		float64(s.Backups), float64(s.Segments), float64(s.StoredBytes), float64(failures),
		unix(s.LastArchivedAt), lag,
	}
	defs := Definitions()
	out := make([]Sample, len(defs))
	for i, d := range defs {
		out[i] = Sample{Name: d.Name, Value: values[i], LabelValues: []string{store, server}}
	}
	return out
}

func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// Failures counts failed WAL archive calls per store and server, and remembers the newest.
// Archiving runs in the same process that answers Collect (the instance's sidecar), so a count
// in memory is exact for it.
type Failures struct {
	mu     sync.Mutex
	counts map[[2]string]Failure
}

// Failure is what Failures knows of one server's failed archive calls.
type Failure struct {
	// Count is how many failed since the process started.
	Count uint64
	// Last is when the newest failed; Message what its caller was told (a gRPC status
	// message, already safe to show).
	Last    time.Time
	Message string
}

// Add counts one failure at, with the message its caller was told.
func (f *Failures) Add(store, server string, at time.Time, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.counts = map[[2]string]Failure{}
	}
	k := [2]string{store, server}
	c := f.counts[k]
	c.Count++
	if !at.Before(c.Last) {
		c.Last, c.Message = at, message
	}
	f.counts[k] = c
}

// Count returns the failures counted for store and server.
func (f *Failures) Count(store, server string) uint64 { return f.Get(store, server).Count }

// Get returns what is known of store and server's failures (zero: none).
func (f *Failures) Get(store, server string) Failure {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[[2]string{store, server}]
}
