package wal

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// The catalog is an index of what the object store holds, never the judge of it: archiving
// and restoring decide from the store alone (a conditional PUT that never overwrites, a
// listing and a hash compare), so they go on while Plinth's database is down. behind is the
// catalog as those paths see it:
//
//   - a lookup answers "unknown" when the catalog does not answer within catalogBudget (the
//     store is asked instead), and after one failure the catalog is not asked again until a
//     backoff has passed, so an outage costs each call nothing;
//   - a record that the catalog cannot take waits in memory, in archive order, and a
//     background flush writes it once the catalog answers again — the catalog (and the
//     events it announces) catches up, with the time each file was really archived;
//   - lookups see the records still waiting, so a file archived during the outage is known.
//
// What waits is lost if the process stops before the catalog returns; the store still holds
// every file, and `cnpgi-plugin catalog rebuild` (or the next archive of the same name)
// brings the catalog level.
type behind struct {
	cat Catalog
	log *slog.Logger

	mu      sync.Mutex
	pending map[string]ArchivedFile // by fileID, waiting for the catalog
	order   []string                // fileIDs in archive order (entries may already be gone)
	first   map[string]firstWaiting // SetFirstRequired calls waiting, by target
	down    bool                    // the last call to the catalog failed
	retryAt time.Time               // while down: no call before this
	backoff time.Duration
	dropped int // records not kept because the queue was full, this outage
	wake    chan struct{}
}

// firstWaiting is one SetFirstRequired the catalog has not taken yet.
type firstWaiting struct{ store, server, name string }

const (
	// catalogBudget bounds one catalog call on the archive and restore paths: past it the
	// store decides alone.
	catalogBudget = 2 * time.Second
	// minBackoff and maxBackoff space the calls to a catalog that failed.
	minBackoff = time.Second
	maxBackoff = 30 * time.Second
	// maxWaiting bounds the records kept in memory (about 300 bytes each): 2 TiB of 16 MiB
	// segments. Past it, newer records are left to a rebuild.
	maxWaiting = 1 << 17
	// flushBatch is how many waiting records one flush round writes before it looks again.
	flushBatch = 256
)

func newBehind(c Catalog, log *slog.Logger) *behind {
	return &behind{cat: c, log: log, pending: map[string]ArchivedFile{}, first: map[string]firstWaiting{},
		wake: make(chan struct{}, 1)}
}

func fileID(store, server, name string) string { return store + "\x00" + server + "\x00" + name }

// skipping reports whether the catalog is down and its backoff not yet over.
func (b *behind) skipping() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.down && time.Now().Before(b.retryAt)
}

// failed notes a failed catalog call (not one the caller gave up on).
func (b *behind) failed(ctx context.Context, what string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.down {
		b.down, b.backoff = true, minBackoff
		b.log.WarnContext(ctx, "the catalog database does not answer: archiving and restoring go on from the object store alone; "+
			"what is archived meanwhile is recorded once it answers", "while", what, "error", err)
	} else if b.backoff < maxBackoff {
		b.backoff = min(2*b.backoff, maxBackoff)
	}
	b.retryAt = time.Now().Add(b.backoff)
}

// answered notes a catalog call that succeeded.
// It also ends an outage once nothing waits any more.
func (b *behind) answered(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.down || len(b.pending) > 0 || len(b.first) > 0 {
		return
	}
	b.down = false
	if b.dropped > 0 {
		b.log.WarnContext(ctx, "the catalog is back, but the queue overflowed during the outage: run `cnpgi-plugin catalog rebuild` "+
			"to record those files from the store", "not recorded", b.dropped)
	} else {
		b.log.InfoContext(ctx, "the catalog answers again and has every file archived meanwhile")
	}
	b.dropped = 0
}

// budget is the context of one catalog call: at most catalogBudget, and not ended by the
// caller giving up when keep is set (a record after a successful upload must not be lost).
func budget(ctx context.Context, keep bool) (context.Context, context.CancelFunc) {
	if keep {
		ctx = context.WithoutCancel(ctx)
	}
	return context.WithTimeout(ctx, catalogBudget)
}

// lookup is Catalog.File that never fails: a waiting record, the catalog's, or unknown.
func (b *behind) lookup(ctx context.Context, store, server, name string) (ArchivedFile, bool) {
	b.mu.Lock()
	f, ok := b.pending[fileID(store, server, name)]
	b.mu.Unlock()
	if ok {
		return f, true
	}
	if b.skipping() {
		return ArchivedFile{}, false
	}
	cctx, cancel := budget(ctx, false)
	defer cancel()
	f, ok, err := b.cat.File(cctx, store, server, name)
	if err != nil {
		if ctx.Err() == nil {
			b.failed(ctx, "looking up "+name, err)
		}
		return ArchivedFile{}, false
	}
	b.answered(ctx)
	return f, ok
}

// record is Catalog.Record that never fails: when the catalog cannot take f now, f waits and
// is returned as stored.
func (b *behind) record(ctx context.Context, f ArchivedFile) ArchivedFile {
	if !b.skipping() && !b.waiting() {
		cctx, cancel := budget(ctx, true)
		stored, _, err := b.cat.Record(cctx, f)
		cancel()
		if err == nil {
			b.answered(ctx)
			return stored
		}
		b.failed(ctx, "recording "+f.Name, err)
	}
	b.enqueue(ctx, f)
	return f
}

// waiting reports records still queued: a new one goes behind them, in archive order.
func (b *behind) waiting() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending) > 0
}

func (b *behind) enqueue(ctx context.Context, f ArchivedFile) {
	id := fileID(f.Store, f.Server, f.Name)
	b.mu.Lock()
	switch _, dup := b.pending[id]; {
	case dup:
	case len(b.pending) >= maxWaiting:
		if b.dropped == 0 {
			b.log.WarnContext(ctx, "too many archived files wait for the catalog: newer ones are left to `cnpgi-plugin catalog rebuild`",
				"waiting", len(b.pending))
		}
		b.dropped++
	default:
		b.pending[id] = f
		b.order = append(b.order, id)
	}
	b.mu.Unlock()
	b.poke()
}

func (b *behind) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// setFirstRequired is Catalog.SetFirstRequired; while the catalog is down the value waits
// (the newest per target) and is written by the flush.
func (b *behind) setFirstRequired(ctx context.Context, store, server, name string) {
	if !b.skipping() {
		cctx, cancel := budget(ctx, true)
		err := b.cat.SetFirstRequired(cctx, store, server, name)
		cancel()
		if err == nil {
			b.mu.Lock()
			delete(b.first, fileID(store, server, ""))
			b.mu.Unlock()
			b.answered(ctx)
			return
		}
		b.failed(ctx, "setting the first required WAL", err)
	}
	b.mu.Lock()
	b.first[fileID(store, server, "")] = firstWaiting{store, server, name}
	b.mu.Unlock()
	b.poke()
}

// status is Catalog.Status, or false when the catalog cannot say.
func (b *behind) status(ctx context.Context, store, server string) (Status, bool) {
	if b.skipping() {
		return Status{}, false
	}
	cctx, cancel := budget(ctx, false)
	defer cancel()
	st, err := b.cat.Status(cctx, store, server)
	if err != nil {
		if ctx.Err() == nil {
			b.failed(ctx, "reading the archive's status", err)
		}
		return Status{}, false
	}
	b.answered(ctx)
	return st, true
}

// Waiting is how many archived files wait for the catalog to record them.
func (b *behind) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

// run flushes waiting records until ctx ends, then tries once more briefly (a graceful
// shutdown while the catalog answers loses nothing).
func (b *behind) run(ctx context.Context) {
	tick := time.NewTicker(minBackoff)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
			b.flush(final)
			cancel()
			return
		case <-tick.C:
		case <-b.wake:
		}
		b.flush(ctx)
	}
}

// flush writes waiting records in archive order, then waiting first-required values, until
// the queue is empty or the catalog fails again.
func (b *behind) flush(ctx context.Context) {
	for ctx.Err() == nil {
		if b.skipping() {
			return
		}
		batch := b.next(flushBatch)
		if len(batch) == 0 {
			break
		}
		for _, f := range batch {
			cctx, cancel := budget(ctx, false)
			stored, _, err := b.cat.Record(cctx, f)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					b.failed(ctx, "recording files archived while it was down", err)
				}
				return
			}
			if stored.SHA256 != f.SHA256 {
				// The store took our object with If-None-Match, so the catalog's row is the
				// stale one (e.g. restored from an old dump): say so, the store is right.
				b.log.ErrorContext(ctx, "the catalog records other bytes than the store holds for an archived file; "+
					"run `cnpgi-plugin catalog rebuild`", "server", f.Server, "wal", f.Name, "key", f.Key)
			}
			b.done(fileID(f.Store, f.Server, f.Name))
		}
	}
	for _, w := range b.firstWaits() {
		cctx, cancel := budget(ctx, false)
		err := b.cat.SetFirstRequired(cctx, w.store, w.server, w.name)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				b.failed(ctx, "setting the first required WAL", err)
			}
			return
		}
		b.mu.Lock()
		if b.first[fileID(w.store, w.server, "")] == w {
			delete(b.first, fileID(w.store, w.server, ""))
		}
		b.mu.Unlock()
	}
	b.answered(ctx)
}

// next returns up to n waiting records, oldest first.
func (b *behind) next(n int) []ArchivedFile {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []ArchivedFile
	i := 0
	for ; i < len(b.order) && len(out) < n; i++ {
		if f, ok := b.pending[b.order[i]]; ok {
			out = append(out, f)
		}
	}
	// Entries before the first one still waiting are done: drop them from the order.
	for len(b.order) > 0 {
		if _, ok := b.pending[b.order[0]]; ok {
			break
		}
		b.order = b.order[1:]
	}
	return out
}

func (b *behind) done(id string) {
	b.mu.Lock()
	delete(b.pending, id)
	b.mu.Unlock()
}

func (b *behind) firstWaits() []firstWaiting {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]firstWaiting, 0, len(b.first))
	for _, w := range b.first {
		out = append(out, w)
	}
	return out
}
