// Package restore is the plugin's CNPG-I restore role: it serves RestoreJobHooks (cnpg-i
// v0.6.0 wire contract, restore_job_server.go) for a full-recovery Job, recovering a
// PostgreSQL data directory from a base backup in an object store (ours or barman-cloud's)
// and writing the recovery configuration that replays the WAL archive up to the cluster's
// recovery target. It imports no other role's package.
package restore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// Options configure a Service.
type Options struct {
	// PGData is the data directory to restore into (the recovery job's PGDATA).
	PGData string
	// Command builds restore_command.
	Command Command
	Logger  *slog.Logger
}

// Service restores base backups.
type Service struct {
	pgdata string
	cmd    Command
	log    *slog.Logger
}

// NewService returns a Service restoring into o.PGData.
func NewService(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Service{pgdata: o.PGData, cmd: o.Command, log: o.Logger}
}

// Request is one recovery.
type Request struct {
	// Source is the recovery source's archive: its base backups and WAL.
	Source wal.Target
	// Target says where replay stops and may name the backup.
	Target Target
	// EmptyArchive, when set, is the new cluster's own WAL archive, which must hold nothing
	// yet (check_empty_wal_archive): a new cluster must not archive over another's WAL.
	EmptyArchive *wal.Target
	// Relocations put tablespaces, by name, somewhere else than their original location.
	Relocations map[string]string
}

// Result is a restored data directory and how to start it.
type Result struct {
	Backup *backup.Info
	// Config holds the postgresql.conf lines recovery needs (restore_command, the target).
	Config string
	// Envs are NAME=VALUE pairs for the recovering PostgreSQL's environment.
	Envs []string
}

// Restore picks the backup, checks that the archive can replay it, unpacks PGDATA and the
// tablespaces (each into its original location, linked from pg_tblspc), and writes
// recovery.signal. A failed restore removes what it wrote.
func (s *Service) Restore(ctx context.Context, req Request) (*Result, error) {
	if s.pgdata == "" || !filepath.IsAbs(s.pgdata) {
		return nil, &backup.Error{Kind: backup.KindConfig, Msg: "the plugin has no absolute PGDATA to restore into (PLINTH_CNPGI_PGDATA)"}
	}
	if req.EmptyArchive != nil {
		if err := checkEmptyArchive(ctx, *req.EmptyArchive); err != nil {
			return nil, err
		}
	}
	src := req.Source
	backups, err := backup.List(ctx, src.Store.Store, src.Server)
	if err != nil {
		return nil, err
	}
	chosen, err := req.Target.choose(backups)
	if err != nil {
		return nil, err
	}
	info := chosen.Info
	if key, err := wal.Find(ctx, src, info.BeginWAL); err != nil {
		return nil, err
	} else if key == "" {
		return nil, &backup.Error{Kind: backup.KindPrecondition,
			Msg: fmt.Sprintf("the archive of server %q lacks %s, the first WAL segment backup %s needs", src.Server, info.BeginWAL, info.ID)}
	}
	start := time.Now()
	s.log.InfoContext(ctx, "restoring base backup", "backup_id", info.ID, "store", src.Store.Name, "server", src.Server, "pgdata", s.pgdata)
	if err := s.unpack(ctx, src, chosen, req.Relocations); err != nil {
		return nil, err
	}
	command, envs := s.cmd.For(src.Store.Name, src.Server)
	lines := append([]string{"restore_command = " + confQuote(command), "recovery_target_action = 'promote'"}, req.Target.settings()...)
	s.log.InfoContext(ctx, "base backup restored", "backup_id", info.ID, "seconds", time.Since(start).Seconds())
	return &Result{Backup: info, Config: strings.Join(lines, "\n") + "\n", Envs: envs}, nil
}

// unpack writes the backup's archives, each tablespace into its relocation or original
// location; on failure it removes what it wrote.
func (s *Service) unpack(ctx context.Context, src wal.Target, b backup.Stored, relocations map[string]string) (err error) {
	created, err := emptyDir(s.pgdata, "PGDATA")
	if err != nil {
		return &backup.Error{Kind: backup.KindPrecondition, Msg: err.Error()}
	}
	type made struct {
		dir     string
		created bool
	}
	cleanup := []made{{s.pgdata, created}}
	defer func() {
		if err != nil {
			for _, m := range cleanup {
				clearDir(m.dir, m.created)
			}
		}
	}()
	dest := map[string]string{"data": s.pgdata}
	locations := map[uint32]string{} // the tablespaces' new places
	for _, ts := range b.Info.Tablespaces {
		loc := ts.Location
		if r, ok := relocations[ts.Name]; ok {
			loc = r
		}
		if !filepath.IsAbs(loc) {
			continue
		}
		oid := strconv.FormatUint(uint64(ts.OID), 10)
		c, err := emptyDir(loc, "tablespace "+ts.Name)
		if err != nil {
			return &backup.Error{Kind: backup.KindPrecondition, Msg: err.Error()}
		}
		cleanup = append(cleanup, made{loc, c})
		dest[oid] = loc
		locations[ts.OID] = loc
	}
	for _, a := range b.Archives {
		dir, ok := dest[a.Base]
		if !ok {
			s.log.WarnContext(ctx, "skipping an archive of no known tablespace", "key", a.Key)
			continue
		}
		if err := unpackArchive(ctx, src, a, dir); err != nil {
			return err
		}
	}
	for oid, loc := range locations {
		link := filepath.Join(s.pgdata, "pg_tblspc", strconv.FormatUint(uint64(oid), 10))
		if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
			return err
		}
		if err := os.Symlink(loc, link); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	if err := rewriteTablespaceMap(s.pgdata, locations); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.pgdata, "recovery.signal"), nil, 0o600)
}

// rewriteTablespaceMap makes the restored tablespace_map name the tablespaces' new places:
// PostgreSQL recreates the pg_tblspc links from it when recovery starts, which would
// otherwise point back at the original locations.
func rewriteTablespaceMap(pgdata string, locations map[uint32]string) error {
	path := filepath.Join(pgdata, "tablespace_map")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimRight(string(data), "\n"), "\n") {
		oidText, _, _ := strings.Cut(line, " ")
		if oid, err := strconv.ParseUint(oidText, 10, 32); err == nil {
			if loc, ok := locations[uint32(oid)]; ok {
				line = oidText + " " + loc
			}
		}
		b.WriteString(line + "\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

func unpackArchive(ctx context.Context, src wal.Target, a backup.Archive, dir string) error {
	r, err := backup.OpenArchive(ctx, src.Store, a)
	if err != nil {
		return fmt.Errorf("open %s: %w", a.Key, err)
	}
	defer r.Close()
	if err := newExtractor(dir).extract(r); err != nil {
		return fmt.Errorf("unpack %s: %w", a.Key, err)
	}
	return nil
}

// checkEmptyArchive refuses a restore whose new cluster would archive into a server
// directory that already holds WAL.
func checkEmptyArchive(ctx context.Context, t wal.Target) error {
	for obj, err := range t.Store.Store.List(ctx, t.Server+"/wals/") {
		if err != nil {
			return err
		}
		return &wal.NotEmptyError{Store: t.Store.Name, Server: t.Server, Key: obj.Key}
	}
	return nil
}
