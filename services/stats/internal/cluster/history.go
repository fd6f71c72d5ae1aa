package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Sample is the cluster's state at one moment, as the history keeps it.
type Sample struct {
	At                     time.Time
	Health                 string
	Checks                 int // active, unmuted
	Used, Total, Available int64
	OSDsUp, OSDsIn         int
	NodesReady, NodesTotal int
}

// sameState reports whether two samples show the same state. Usage moves all the time and is
// not a change of state; health, OSDs and nodes going up or down are.
func (s Sample) sameState(o Sample) bool {
	return s.Health == o.Health && s.OSDsUp == o.OSDsUp && s.OSDsIn == o.OSDsIn &&
		s.NodesReady == o.NodesReady && s.NodesTotal == o.NodesTotal
}

// sample is the View's state.
func (v *View) sample() Sample {
	s := Sample{At: v.At, Health: v.Summary.Health, Used: v.Summary.Usage.Used, Total: v.Summary.Usage.Total,
		Available: v.Summary.Usage.Available,
		OSDsUp:    v.Summary.OSDsUp, OSDsIn: v.Summary.OSDsIn, NodesTotal: len(v.Nodes)}
	for _, c := range v.Summary.Checks {
		if !c.Muted {
			s.Checks++
		}
	}
	for _, n := range v.Nodes {
		if n.Status == StatusReady {
			s.NodesReady++
		}
	}
	return s
}

// HistoryStore keeps samples (in schema stats).
type HistoryStore interface {
	AddSamples(ctx context.Context, samples []Sample) error
	// SamplesSince returns the samples taken at or after t, oldest first, preceded by the
	// newest one taken before t (the state the window started in), if any.
	SamplesSince(ctx context.Context, t time.Time) ([]Sample, error)
	// SamplesBetween returns the samples taken from from to to (both included), oldest first.
	SamplesBetween(ctx context.Context, from, to time.Time) ([]Sample, error)
	// PruneSamples deletes samples taken before t and all but the newest keep.
	PruneSamples(ctx context.Context, before time.Time, keep int) (int64, error)
}

// RecorderOptions tune a Recorder; zero values take the defaults.
type RecorderOptions struct {
	// Window is how far back changes of state count against stability and usage makes the
	// trend; default 1h.
	Window time.Duration
	// Every is the longest time between two samples while nothing changes; default 1m.
	Every time.Duration
	// Retention is how long samples are kept; default 24h. Keep caps their number;
	// default 20000.
	Retention time.Duration
	Keep      int
	Logger    *slog.Logger
}

// Recorder keeps the recent history in memory for the radar and writes it to a
// HistoryStore in the background, so a restart keeps it. A sample is taken whenever the
// state changes and at least every Options.Every otherwise.
type Recorder struct {
	store     HistoryStore
	o         RecorderOptions
	mu        sync.Mutex
	recent    []Sample // within the window, plus the one before it
	pending   []Sample // not yet written
	lastPrune time.Time
}

// maxPending bounds the samples held while the database is away.
const maxPending = 1000

// NewRecorder returns a Recorder over store.
func NewRecorder(store HistoryStore, o RecorderOptions) *Recorder {
	if o.Window <= 0 {
		o.Window = time.Hour
	}
	if o.Every <= 0 {
		o.Every = time.Minute
	}
	if o.Retention <= 0 {
		o.Retention = 24 * time.Hour
	}
	if o.Retention < o.Window {
		o.Retention = o.Window
	}
	if o.Keep <= 0 {
		o.Keep = 20000
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Recorder{store: store, o: o}
}

// Load reads the stored history of the window ending at now.
func (r *Recorder) Load(ctx context.Context, now time.Time) error {
	samples, err := r.store.SamplesSince(ctx, now.Add(-r.o.Window))
	if err != nil {
		return fmt.Errorf("load the usage history: %w", err)
	}
	r.mu.Lock()
	r.recent = samples
	r.mu.Unlock()
	return nil
}

// Observe takes s into the history when the state changed or the last sample is old, and
// returns the number of changes of state within the window ending at s.At.
func (r *Recorder) Observe(s Sample) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.recent); n == 0 || !r.recent[n-1].sameState(s) || s.At.Sub(r.recent[n-1].At) >= r.o.Every {
		r.recent = append(r.recent, s)
		r.pending = append(r.pending, s)
		if over := len(r.pending) - maxPending; over > 0 {
			r.o.Logger.Warn("the database keeps refusing the usage history; dropping the oldest samples", "dropped", over)
			r.pending = r.pending[over:]
		}
	}
	start := s.At.Add(-r.o.Window)
	// Keep the newest sample before the window: the state the window started in.
	for len(r.recent) > 1 && !r.recent[1].At.After(start) {
		r.recent = r.recent[1:]
	}
	changes := 0
	for i := 1; i < len(r.recent); i++ {
		if r.recent[i].At.After(start) && !r.recent[i].sameState(r.recent[i-1]) {
			changes++
		}
	}
	return changes
}

// Growth is how fast used capacity grew over the window, in bytes per second; ok is false
// until the samples span a minute.
func (r *Recorder) Growth() (bytesPerSec float64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.recent) < 2 {
		return 0, false
	}
	first, last := r.recent[0], r.recent[len(r.recent)-1]
	span := last.At.Sub(first.At)
	if span < time.Minute {
		return 0, false
	}
	return float64(last.Used-first.Used) / span.Seconds(), true
}

// Flush writes the pending samples and, every ten minutes, prunes what is past retention.
// Samples that fail to write stay pending for the next flush.
func (r *Recorder) Flush(ctx context.Context) error {
	r.mu.Lock()
	batch := r.pending
	r.pending = nil
	r.mu.Unlock()
	if len(batch) > 0 {
		if err := r.store.AddSamples(ctx, batch); err != nil {
			r.mu.Lock()
			r.pending = append(batch, r.pending...)
			r.mu.Unlock()
			return fmt.Errorf("write the usage history: %w", err)
		}
	}
	now := time.Now()
	if now.Sub(r.lastPrune) < 10*time.Minute {
		return nil
	}
	if _, err := r.store.PruneSamples(ctx, now.Add(-r.o.Retention), r.o.Keep); err != nil {
		return fmt.Errorf("prune the usage history: %w", err)
	}
	r.lastPrune = now
	return nil
}

// Retention is how long the history is kept.
func (r *Recorder) Retention() time.Duration { return r.o.Retention }

// Between returns the samples taken from `from` to `to` (both included), oldest first: those
// stored and those observed but not written yet (kept in memory until the next Flush).
func (r *Recorder) Between(ctx context.Context, from, to time.Time) ([]Sample, error) {
	r.mu.Lock()
	var mem []Sample
	for _, s := range r.recent { // every pending sample is also in recent (within the window)
		if !s.At.Before(from) && !s.At.After(to) {
			mem = append(mem, s)
		}
	}
	r.mu.Unlock()
	stored, err := r.store.SamplesBetween(ctx, from, to)
	if err != nil {
		return nil, fmt.Errorf("read the usage history: %w", err)
	}
	// The database keeps microseconds: a sample in both is the same microsecond, and one not
	// written yet is answered as it will be once written.
	seen := make(map[int64]bool, len(stored))
	for _, s := range stored {
		seen[s.At.UnixMicro()] = true
	}
	out := stored
	for _, s := range mem {
		if !seen[s.At.UnixMicro()] {
			s.At = s.At.Truncate(time.Microsecond)
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b Sample) int { return a.At.Compare(b.At) })
	return out, nil
}

// Thin returns at most max of samples (oldest first), spread over their time span: the first,
// then the newest of each of max−1 equal stretches of time after it. Fewer than max samples
// come back as they are.
func Thin(samples []Sample, max int) []Sample {
	if len(samples) <= max || max < 1 {
		return samples
	}
	if max == 1 {
		return samples[len(samples)-1:]
	}
	first, last := samples[0].At, samples[len(samples)-1].At
	span := last.Sub(first)
	buckets := max - 1
	out := []Sample{samples[0]}
	prev := -1
	for _, s := range samples[1:] {
		b := buckets - 1
		if span > 0 {
			b = min(int(float64(s.At.Sub(first))/float64(span)*float64(buckets)), buckets-1)
		}
		if b == prev {
			out[len(out)-1] = s // the newest of its stretch
			continue
		}
		out = append(out, s)
		prev = b
	}
	return out
}
