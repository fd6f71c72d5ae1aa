package backup

import (
	"github.com/plinth-dev/plinth/libs/storage/compression"

	"context"
	"errors"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// Report is what a retention run did (or, dry, would do).
type Report struct {
	Policy Policy
	// Kept and Deleted are backup ids.
	Kept, Deleted []string
	// WALHorizon is the oldest WAL kept; WALDeleted counts the WAL files deleted.
	WALHorizon string
	WALDeleted int
	// FirstRecoverabilityPoint is the earliest time a recovery can now reach; zero without
	// any completed backup. LastSuccessful is the end of the newest completed backup.
	FirstRecoverabilityPoint, LastSuccessful time.Time
	DryRun                                   bool
}

// deleteWorkers bounds concurrent deletions: object stores answer one key per request.
const deleteWorkers = 16

// Retain applies the policy to the server's backups in the target store: deletes the
// backups it does not keep (backup.info first, so that an interrupted deletion leaves no
// backup that looks complete), then the WAL older than what the oldest kept backup needs,
// never past the first required WAL. With dryRun nothing is deleted.
func (s *Service) Retain(ctx context.Context, t Target, p Policy, dryRun bool) (Report, error) {
	backups, err := List(ctx, t.Store.Store, t.Server)
	if err != nil {
		return Report{}, err
	}
	firstRequired, err := s.catalog.FirstRequiredWAL(ctx, t.Store.Name, t.Server)
	if err != nil {
		return Report{}, err
	}
	pl := plan(backups, p, s.now(), firstRequired)
	rep := Report{Policy: p, WALHorizon: pl.WALBefore, FirstRecoverabilityPoint: pl.FirstRecoverabilityPoint,
		LastSuccessful: pl.LastSuccessful, DryRun: dryRun}
	for _, b := range pl.Keep {
		rep.Kept = append(rep.Kept, b.ID)
	}
	for _, b := range pl.Delete {
		rep.Deleted = append(rep.Deleted, b.ID)
	}
	wals, err := obsoleteWAL(ctx, t.Store.Store, t.Server, pl.WALBefore)
	if err != nil {
		return rep, err
	}
	rep.WALDeleted = len(wals)
	if dryRun {
		return rep, nil
	}
	for _, b := range pl.Delete {
		if err := s.deleteBackup(ctx, t, b); err != nil {
			return rep, err
		}
	}
	var names []string
	err = deleteAll(ctx, t.Store.Store, wals, func(key string) { names = append(names, walName(key)) })
	if cerr := s.catalog.DeleteWAL(ctx, t.Store.Name, t.Server, names); cerr != nil {
		err = errors.Join(err, cerr)
	}
	s.log.InfoContext(ctx, "retention applied", "store", t.Store.Name, "server", t.Server, "policy", p.String(),
		"backups_deleted", len(rep.Deleted), "wal_deleted", len(names), "first_recoverability_point", rep.FirstRecoverabilityPoint)
	return rep, err
}

func (s *Service) deleteBackup(ctx context.Context, t Target, b Stored) error {
	info := InfoKey(t.Server, b.ID)
	if slices.Contains(b.Keys, info) {
		if err := t.Store.Store.Delete(ctx, info); err != nil {
			return err
		}
	}
	rest := slices.DeleteFunc(slices.Clone(b.Keys), func(k string) bool { return k == info })
	if err := deleteAll(ctx, t.Store.Store, rest, nil); err != nil {
		return err
	}
	return s.catalog.DeleteBackup(ctx, t.Store.Name, t.Server, b.ID)
}

// obsoleteWAL lists the keys of the server's archived WAL files before the horizon.
func obsoleteWAL(ctx context.Context, st objectstore.Store, server, horizon string) ([]string, error) {
	if horizon == "" {
		return nil, nil
	}
	var keys []string
	for obj, err := range st.List(ctx, server+"/wals/") {
		if err != nil {
			return nil, err
		}
		if walObsolete(walName(obj.Key), horizon) {
			keys = append(keys, obj.Key)
		}
	}
	return keys, nil
}

// walName is an archived WAL file's name: the key's base name without compression suffix.
func walName(key string) string { return compression.TrimExt(path.Base(key)) }

// deleteAll deletes keys with a few workers; done (if set) is called, serially, for each
// key deleted. It stops at the first error.
func deleteAll(ctx context.Context, st objectstore.Store, keys []string, done func(string)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan string)
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for range min(deleteWorkers, len(keys)) {
		wg.Go(func() {
			for key := range work {
				err := st.Delete(ctx, key)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
					cancel(err)
				} else if done != nil {
					done(key)
				}
				mu.Unlock()
			}
		})
	}
	for _, k := range keys {
		if ctx.Err() != nil {
			break
		}
		work <- k
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}
