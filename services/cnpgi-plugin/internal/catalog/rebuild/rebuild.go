// Package rebuild makes the catalog match what the object stores hold: the stores are the
// source of truth, and the catalog (WAL files and base backups) can always be recreated
// from them, after a lost database or for archives written by other tools (barman-cloud).
package rebuild

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// Catalog is what a rebuild reads and writes; the Postgres adapter lives in package catalog.
type Catalog interface {
	WALNames(ctx context.Context, store, server string) ([]string, error)
	RecordFound(ctx context.Context, files []wal.ArchivedFile) (int, error)
	DeleteWAL(ctx context.Context, store, server string, names []string) error
	SaveBackup(ctx context.Context, r backup.Record) error
	Backups(ctx context.Context, store, server string) ([]backup.Record, error)
	DeleteBackup(ctx context.Context, store, server, id string) error
}

// Report is what a rebuild changed for one server.
type Report struct {
	Store, Server string
	// WALAdded rows were missing and read from the store; WALRemoved rows named files the
	// store no longer has; WALKept were right already.
	WALAdded, WALRemoved, WALKept int
	// BackupsSaved were written from their backup.info; BackupsRemoved had no backup left.
	BackupsSaved, BackupsRemoved int
}

// readers bounds concurrent downloads: every WAL file missing from the catalog is read
// once, to hash it.
const readers = 8

// batch is how many WAL rows one transaction adds.
const batch = 500

// Run rebuilds the catalog of the given servers in the store, or of every server it holds
// when servers is empty.
func Run(ctx context.Context, cat Catalog, st *stores.Named, servers []string, log *slog.Logger) ([]Report, error) {
	found, err := scan(ctx, st.Store)
	if err != nil {
		return nil, err
	}
	if len(servers) == 0 {
		servers = slices.Sorted(maps.Keys(found))
	}
	var reports []Report
	for _, server := range servers {
		rep, err := one(ctx, cat, wal.Target{Store: st, Server: server}, found[server])
		if err != nil {
			return reports, err
		}
		log.InfoContext(ctx, "catalog rebuilt", "store", st.Name, "server", server, "wal_added", rep.WALAdded,
			"wal_removed", rep.WALRemoved, "wal_kept", rep.WALKept, "backups_saved", rep.BackupsSaved, "backups_removed", rep.BackupsRemoved)
		reports = append(reports, rep)
	}
	return reports, nil
}

// scan lists the store once and groups its WAL objects by server (the first key segment of
// <server>/wals/... and <server>/base/...).
func scan(ctx context.Context, st objectstore.Store) (map[string][]objectstore.ObjectInfo, error) {
	out := map[string][]objectstore.ObjectInfo{}
	for obj, err := range st.List(ctx, "") {
		if err != nil {
			return nil, err
		}
		server, rest, ok := strings.Cut(obj.Key, "/")
		switch {
		case !ok:
		case strings.HasPrefix(rest, "wals/"):
			out[server] = append(out[server], obj)
		case strings.HasPrefix(rest, "base/"):
			if _, seen := out[server]; !seen {
				out[server] = nil
			}
		}
	}
	return out, nil
}

func one(ctx context.Context, cat Catalog, t wal.Target, objs []objectstore.ObjectInfo) (Report, error) {
	rep := Report{Store: t.Store.Name, Server: t.Server}
	knownNames, err := cat.WALNames(ctx, t.Store.Name, t.Server)
	if err != nil {
		return rep, err
	}
	known := map[string]bool{}
	for _, n := range knownNames {
		known[n] = true
	}
	inStore := map[string]bool{}
	var missing []objectstore.ObjectInfo
	for _, obj := range objs {
		fn, _, ok := wal.ParseObjectKey(t.Server, obj.Key)
		if !ok {
			continue
		}
		inStore[fn.Name] = true
		if known[fn.Name] {
			rep.WALKept++
		} else {
			missing = append(missing, obj)
		}
	}
	if rep.WALAdded, err = describeAll(ctx, cat, t, missing); err != nil {
		return rep, err
	}
	var gone []string
	for _, name := range knownNames {
		if !inStore[name] {
			gone = append(gone, name)
		}
	}
	if err := cat.DeleteWAL(ctx, t.Store.Name, t.Server, gone); err != nil {
		return rep, err
	}
	rep.WALRemoved = len(gone)
	rep.BackupsSaved, rep.BackupsRemoved, err = backups(ctx, cat, t)
	return rep, err
}

// adoptSystemID gives history and backup files, which carry no system identifier, the one
// every segment found with them has, so that check_empty_wal_archive knows them as that
// system's after a rebuild as after archiving. With segments of several systems, none.
func adoptSystemID(files []wal.ArchivedFile) {
	var sys uint64
	for _, f := range files {
		switch {
		case f.SystemID == 0:
		case sys == 0:
			sys = f.SystemID
		case sys != f.SystemID:
			return
		}
	}
	for i := range files {
		if files[i].SystemID == 0 && (files[i].Kind == wal.KindHistory || files[i].Kind == wal.KindBackup) {
			files[i].SystemID = sys
		}
	}
}

// describeAll reads the objects with a few readers and records them in batches.
func describeAll(ctx context.Context, cat Catalog, t wal.Target, objs []objectstore.ObjectInfo) (int, error) {
	files := make([]wal.ArchivedFile, len(objs))
	errs := make([]error, len(objs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(readers, len(objs)) {
		wg.Go(func() {
			for i := range next {
				files[i], errs[i] = wal.Describe(ctx, t, objs[i])
			}
		})
	}
	for i := range objs {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	adoptSystemID(files)
	added := 0
	for chunk := range slices.Chunk(files, batch) {
		n, err := cat.RecordFound(ctx, chunk)
		if err != nil {
			return added, err
		}
		added += n
	}
	return added, nil
}

// backups saves a record for every backup with a backup.info in the store and removes the
// records of backups the store no longer has.
func backups(ctx context.Context, cat Catalog, t wal.Target) (saved, removed int, err error) {
	stored, err := backup.List(ctx, t.Store.Store, t.Server)
	if err != nil {
		return 0, 0, err
	}
	present := map[string]bool{}
	for _, b := range stored {
		if b.Info == nil {
			continue
		}
		present[b.ID] = true
		if err := cat.SaveBackup(ctx, recordOf(t, b)); err != nil {
			return saved, 0, err
		}
		saved++
	}
	recs, err := cat.Backups(ctx, t.Store.Name, t.Server)
	if err != nil {
		return saved, 0, err
	}
	for _, r := range recs {
		if present[r.ID] || r.Status == backup.StatusStarted {
			continue // a backup running now has no backup.info yet
		}
		if err := cat.DeleteBackup(ctx, t.Store.Name, t.Server, r.ID); err != nil {
			return saved, removed, err
		}
		removed++
	}
	return saved, removed, nil
}

func recordOf(t wal.Target, b backup.Stored) backup.Record {
	in := b.Info
	sysID, _ := strconv.ParseUint(in.SystemID, 10, 64)
	r := backup.Record{
		Store: t.Store.Name, Server: t.Server, ID: b.ID, Name: in.Name, Status: in.Status, Timeline: in.Timeline,
		BeginWAL: in.BeginWAL, EndWAL: in.EndWAL, BeginLSN: in.BeginLSN, EndLSN: in.EndLSN,
		BeginTime: in.BeginTime, EndTime: in.EndTime, Size: in.Size, SystemID: sysID, PGVersion: in.Version, Error: in.Error,
	}
	for _, a := range b.Archives {
		r.StoredSize += a.Size
		r.Compression = a.Compression
	}
	switch r.Status {
	case backup.StatusDone, backup.StatusFailed, backup.StatusStarted:
	default: // barman's EMPTY, WAITING_FOR_WALS, SYNCING: not restorable as they are
		r.Status, r.Error = backup.StatusFailed, "barman status "+string(in.Status)
	}
	if r.BeginTime.IsZero() {
		r.BeginTime = r.EndTime
	}
	return r
}
