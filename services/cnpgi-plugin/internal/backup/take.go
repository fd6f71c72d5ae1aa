package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"

	"github.com/plinth-dev/plinth/libs/storage/compression"
)

// Request is one base backup.
type Request struct {
	// Target is where the backup goes.
	Target Target
	// WALStore holds the cluster's WAL archive. When it is not Target's store (a per-backup
	// store), the segments the backup needs are copied beside it, so that the backup can be
	// restored from that store alone.
	WALStore *stores.Named
	// Name is a human name (the Backup object's); Instance the backed-up pod's name.
	Name, Instance string
	Compression    Compression
	// ImmediateCheckpoint starts at once instead of waiting for a spread checkpoint.
	ImmediateCheckpoint bool
	// WaitForArchive makes pg_backup_stop wait until the WAL the backup needs is archived.
	WaitForArchive bool
}

// Result is a completed backup.
type Result struct {
	Info *Info
	// StoredSize is what the store holds for it.
	StoredSize  int64
	Compression Compression
	// TablespaceMap is pg_backup_stop's tablespace map ("" without user tablespaces).
	TablespaceMap string
	// WALCopied counts the WAL files copied into a per-backup store.
	WALCopied int
	// Retention is the retention run that followed the backup (TakeAndRetain); nil when
	// none ran.
	Retention *Retained
}

// Take runs an online base backup of the instance: pg_backup_start, every tablespace and
// then PGDATA streamed as tar archives through compression into the store, pg_backup_stop,
// backup_label and tablespace_map appended to the PGDATA archive, backup.info last. A
// failed backup is recorded (backup.info with status FAILED, as barman does).
func (s *Service) Take(ctx context.Context, req Request) (*Result, error) {
	s.takeMu.Lock()
	defer s.takeMu.Unlock()
	if req.Compression == "" {
		req.Compression = compression.Gzip
	}
	in, err := connectInstance(ctx, s.instanceURL)
	if err != nil {
		return nil, err
	}
	defer in.close(ctx)
	if _, err := os.Stat(filepath.Join(in.pgdata, "PG_VERSION")); err != nil {
		return nil, precondition(err, "the plugin cannot read PGDATA of the instance it connects to: it must run beside PostgreSQL (the instance sidecar) as the same user")
	}
	id, err := s.newID(ctx, req.Target)
	if err != nil {
		return nil, err
	}
	info := &Info{
		ID: id, Name: req.Name, Status: StatusStarted, ServerName: req.Target.Server, BeginTime: s.stamp(),
		PGData: in.pgdata, ConfigFile: in.configFile, HBAFile: in.hbaFile, IdentFile: in.identFile,
		Tablespaces: in.tablespaces, Version: in.version, SegmentSize: in.segmentSize, SystemID: in.systemID,
	}
	if err := s.catalog.SaveBackup(ctx, recordOf(req, info, 0)); err != nil {
		return nil, err
	}
	s.log.InfoContext(ctx, "base backup started", "backup_id", id, "store", req.Target.Store.Name, "server", req.Target.Server)
	res, err := s.run(ctx, in, req, info)
	if err != nil {
		s.recordFailure(ctx, req, info, err)
		return nil, err
	}
	s.log.InfoContext(ctx, "base backup completed", "backup_id", id, "begin_wal", info.BeginWAL, "end_wal", info.EndWAL,
		"size", info.Size, "stored_size", res.StoredSize, "seconds", info.EndTime.Sub(info.BeginTime).Seconds())
	return res, nil
}

func (s *Service) run(ctx context.Context, in *instance, req Request, info *Info) (*Result, error) {
	st, server, comp := req.Target.Store, req.Target.Server, req.Compression
	begin, err := in.start(ctx, fmt.Sprintf("Plinth backup %s %s", server, info.ID), req.ImmediateCheckpoint)
	if err != nil {
		return nil, err
	}
	info.BeginLSN = begin
	copyStart := s.now()
	res := &Result{Info: info, Compression: comp}
	for _, ts := range info.Tablespaces {
		if !filepath.IsAbs(ts.Location) {
			continue // an in-place tablespace (pg_tblspc/<oid>) travels inside PGDATA
		}
		key := archiveKey(server, info.ID, strconv.FormatUint(uint64(ts.OID), 10), comp)
		raw, stored, err := upload(ctx, st, key, comp, func(w *tarWriter) error {
			return w.addTree(ts.Location, tablespaceWalk(in.majorVersion))
		})
		if err != nil {
			return nil, fmt.Errorf("tablespace %s: %w", ts.Name, err)
		}
		info.Size, res.StoredSize = info.Size+raw, res.StoredSize+stored
	}
	var stop stopResult
	raw, stored, err := upload(ctx, st, archiveKey(server, info.ID, "data", comp), comp, func(w *tarWriter) error {
		if err := w.addTree(in.pgdata, pgdataWalk(in.pgdata, info.Tablespaces)); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(in.pgdata, "global", "pg_control")); err != nil {
			return err
		}
		if err := w.addFile(pgControl, filepath.Join(in.pgdata, "global", "pg_control")); err != nil {
			return err
		}
		if stop, err = in.stop(ctx, req.WaitForArchive); err != nil {
			return err
		}
		root, err := os.Stat(in.pgdata)
		if err != nil {
			return err
		}
		if err := w.addBytes("backup_label", []byte(stop.label), root); err != nil {
			return err
		}
		if stop.spcmap == "" {
			return nil
		}
		return w.addBytes("tablespace_map", []byte(stop.spcmap), root)
	})
	if err != nil {
		return nil, err
	}
	info.Size, res.StoredSize = info.Size+raw, res.StoredSize+stored
	if err := s.finish(ctx, in, info, stop); err != nil {
		return nil, err
	}
	res.TablespaceMap = stop.spcmap
	if req.WALStore != nil && req.WALStore.Name != req.Target.Store.Name {
		if !req.WaitForArchive {
			s.log.WarnContext(ctx, "the backup goes to another store than the WAL archive but does not wait for archiving; its WAL is not copied and it cannot be restored from that store alone",
				"backup_id", info.ID, "store", req.Target.Store.Name)
		} else if res.WALCopied, err = copyBackupWAL(ctx, req.WALStore, st, server, info); err != nil {
			return nil, err
		}
	}
	info.CopyTime = s.now().Sub(copyStart)
	info.Status, info.EndTime = StatusDone, s.stamp()
	data := info.Encode()
	if err := st.Store.Put(ctx, InfoKey(server, info.ID), bytes.NewReader(data), objectstore.PutOptions{IfAbsent: true, Size: int64(len(data))}); err != nil {
		return nil, fmt.Errorf("write backup.info: %w", err)
	}
	fin, err := Finished(recordOf(req, info, res.StoredSize), authn.Actor(ctx))
	if err != nil {
		return nil, err
	}
	if err := s.catalog.FinishBackup(ctx, fin); err != nil {
		return nil, err
	}
	return res, nil
}

// finish fills the backup's WAL range from pg_backup_stop and the label, and creates
// barman's restore point.
func (s *Service) finish(ctx context.Context, in *instance, info *Info, stop stopResult) error {
	beginWAL, tli, err := labelStart(stop.label)
	if err != nil {
		return precondition(err, "pg_backup_stop returned an unexpected backup_label")
	}
	seg := in.segmentSize
	info.Label, info.BeginWAL, info.Timeline = stop.label, beginWAL, tli
	info.BeginOffset = int64(uint64(info.BeginLSN) % uint64(seg))
	info.EndLSN, info.EndOffset = stop.lsn, int64(uint64(stop.lsn)%uint64(seg))
	// The last segment recovery needs holds the byte before the stop location.
	last := stop.lsn
	if info.EndOffset == 0 && last > 0 {
		last--
	}
	info.EndWAL = WALFileName(stop.timeline, last, seg)
	if err := in.restorePoint(ctx, "barman_"+info.ID); err != nil {
		s.log.WarnContext(ctx, "could not create the backup's restore point", "backup_id", info.ID, "error", err)
	}
	return nil
}

// recordFailure writes a FAILED backup.info and catalog row, with a context of its own: the
// request's may be what ended.
func (s *Service) recordFailure(ctx context.Context, req Request, info *Info, cause error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	info.Status, info.EndTime = StatusFailed, s.stamp()
	info.Error = "failure: " + publicMessage(cause)
	s.log.ErrorContext(ctx, "base backup failed", "backup_id", info.ID, "error", cause)
	data := info.Encode()
	if err := req.Target.Store.Store.Put(ctx, InfoKey(req.Target.Server, info.ID), bytes.NewReader(data), objectstore.PutOptions{Size: int64(len(data))}); err != nil {
		s.log.WarnContext(ctx, "could not write the failed backup's backup.info", "backup_id", info.ID, "error", err)
	}
	fin, err := Finished(recordOf(req, info, 0), authn.Actor(ctx))
	if err == nil {
		err = s.catalog.FinishBackup(ctx, fin)
	}
	if err != nil {
		s.log.WarnContext(ctx, "could not record the failed backup", "backup_id", info.ID, "error", err)
	}
}

// stamp is the time as backup.info keeps it: UTC, to the microsecond.
func (s *Service) stamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

func publicMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Public()
	}
	return firstLine(err.Error())
}

// newID picks the backup id: the start time, one second later while a backup of that second
// exists (two backups started within a second).
func (s *Service) newID(ctx context.Context, t Target) (string, error) {
	at := s.now()
	for range 10 {
		id := NewID(at)
		taken := false
		for _, err := range t.Store.Store.List(ctx, Dir(t.Server, id)) {
			if err != nil {
				return "", err
			}
			taken = true
			break
		}
		if !taken {
			return id, nil
		}
		at = at.Add(time.Second)
	}
	return "", precondition(nil, "no free backup id near %s for server %q", NewID(s.now()), t.Server)
}

func recordOf(req Request, in *Info, stored int64) Record {
	sysID, _ := strconv.ParseUint(in.SystemID, 10, 64)
	return Record{
		Store: req.Target.Store.Name, Server: req.Target.Server, ID: in.ID, Name: in.Name, Status: in.Status,
		Timeline: in.Timeline, BeginWAL: in.BeginWAL, EndWAL: in.EndWAL, BeginLSN: in.BeginLSN, EndLSN: in.EndLSN,
		BeginTime: in.BeginTime, EndTime: in.EndTime, Size: in.Size, StoredSize: stored, Compression: req.Compression,
		SystemID: sysID, PGVersion: in.Version, Instance: req.Instance, Error: in.Error,
	}
}

// pgdataWalk leaves out what a base backup must not contain (see excludeDirContents), the
// tablespace links (tablespace_map recreates them) and tablespaces that live inside PGDATA
// (they have their own archive).
func pgdataWalk(pgdata string, tablespaces []Tablespace) walkOptions {
	var skipped []string
	for _, ts := range tablespaces {
		if !filepath.IsAbs(ts.Location) {
			continue
		}
		skipped = append(skipped, "pg_tblspc/"+strconv.FormatUint(uint64(ts.OID), 10))
		if rel, ok := strings.CutPrefix(ts.Location, pgdata+"/"); ok {
			skipped = append(skipped, filepath.ToSlash(rel))
		}
	}
	return walkOptions{
		skip: func(rel string) bool {
			return rel == pgControl || slices.Contains(skipped, rel) ||
				!strings.Contains(rel, "/") && slices.Contains(excludeRootFiles, rel)
		},
		emptyDirs: excludeDirContents,
		asDir:     []string{"pg_wal", "pg_xlog"},
	}
}

// tablespaceWalk keeps only this major version's directory of a tablespace
// (PG_<major>_<catalog version>), as barman does.
func tablespaceWalk(major int) walkOptions {
	prefix := fmt.Sprintf("PG_%d_", major)
	return walkOptions{skip: func(rel string) bool {
		top, _, _ := strings.Cut(rel, "/")
		return !strings.HasPrefix(top, prefix)
	}}
}
