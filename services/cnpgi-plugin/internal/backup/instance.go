package backup

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// instance is the backed-up PostgreSQL, through the one session that holds the backup: the
// non-exclusive low-level API ties a backup to its session, and ending the session aborts it.
type instance struct {
	conn *pgx.Conn
	// What the backup needs to know about the server.
	version      int
	pgdata       string
	configFile   string
	hbaFile      string
	identFile    string
	segmentSize  int64
	systemID     string
	inRecovery   bool
	tablespaces  []Tablespace
	majorVersion int
}

// connectInstance opens the backup's session and reads the server's layout.
func connectInstance(ctx context.Context, connString string) (*instance, error) {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		// The parse error may quote the connection string, password included: not repeated.
		return nil, &Error{Kind: KindConfig, Msg: "the instance connection string (PLINTH_CNPGI_INSTANCE_URL) is invalid"}
	}
	cfg.RuntimeParams["application_name"] = "plinth-cnpgi-backup"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, &Error{Kind: KindUnavailable, Msg: "cannot connect to the PostgreSQL instance to back up", Err: err}
	}
	in := &instance{conn: conn}
	if err := in.describe(ctx); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return in, nil
}

func (in *instance) describe(ctx context.Context) error {
	var version, segSize, recovery string
	err := in.conn.QueryRow(ctx, `SELECT current_setting('server_version_num'), current_setting('data_directory'),
			current_setting('config_file'), current_setting('hba_file'), current_setting('ident_file'),
			(SELECT setting FROM pg_settings WHERE name = 'wal_segment_size'),
			(SELECT system_identifier::text FROM pg_control_system()), pg_is_in_recovery()::text`).
		Scan(&version, &in.pgdata, &in.configFile, &in.hbaFile, &in.identFile, &segSize, &in.systemID, &recovery)
	if err != nil {
		return describeErr(err)
	}
	in.version, _ = strconv.Atoi(version)
	in.majorVersion = in.version / 10000
	in.segmentSize, _ = strconv.ParseInt(segSize, 10, 64)
	in.inRecovery = recovery == "true"
	if in.version < 150000 {
		return &Error{Kind: KindPrecondition, Msg: fmt.Sprintf("PostgreSQL %d is not supported: online backups use pg_backup_start/pg_backup_stop (PostgreSQL 15 or later)", in.majorVersion)}
	}
	rows, err := in.conn.Query(ctx, `SELECT spcname, oid::bigint, pg_tablespace_location(oid)
		FROM pg_tablespace WHERE spcname NOT IN ('pg_default', 'pg_global') ORDER BY oid`)
	if err != nil {
		return describeErr(err)
	}
	for rows.Next() {
		var t Tablespace
		var oid int64
		if err := rows.Scan(&t.Name, &oid, &t.Location); err != nil {
			return describeErr(err)
		}
		t.OID = uint32(oid)
		in.tablespaces = append(in.tablespaces, t)
	}
	return describeErr(rows.Err())
}

// describeErr explains the usual cause of failing to read the settings: a role without the
// rights to see data_directory and the control data.
func describeErr(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: KindPrecondition, Err: err,
		Msg: "cannot read the instance's settings (data_directory, wal_segment_size, tablespaces): connect as a superuser or a member of pg_read_all_settings and pg_monitor"}
}

// start begins a non-exclusive backup and returns the starting LSN.
func (in *instance) start(ctx context.Context, label string, fast bool) (LSN, error) {
	var lsn string
	if err := in.conn.QueryRow(ctx, "SELECT pg_backup_start($1, $2)::text", label, fast).Scan(&lsn); err != nil {
		return 0, &Error{Kind: KindPrecondition, Msg: "pg_backup_start failed (the backup role needs EXECUTE on it, or superuser)", Err: err}
	}
	return ParseLSN(lsn)
}

// stopResult is what pg_backup_stop returns.
type stopResult struct {
	lsn      LSN
	timeline uint32
	label    string
	spcmap   string
}

// stop ends the backup; waitForArchive makes PostgreSQL wait until the WAL the backup needs
// is archived (the archive_command must work then).
func (in *instance) stop(ctx context.Context, waitForArchive bool) (stopResult, error) {
	var r stopResult
	var lsn string
	var tli int64
	// The stop timeline is PostgreSQL's own: the current one on a primary, the minimum
	// recovery point's on a standby (which may have followed its primary to a new timeline
	// during the backup).
	err := in.conn.QueryRow(ctx, `SELECT lsn::text, labelfile, coalesce(spcmapfile, ''),
			CASE WHEN pg_is_in_recovery() THEN (SELECT min_recovery_end_timeline::bigint FROM pg_control_recovery())
				ELSE (SELECT timeline_id::bigint FROM pg_control_checkpoint()) END
			FROM pg_backup_stop($1)`, waitForArchive).
		Scan(&lsn, &r.label, &r.spcmap, &tli)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && strings.Contains(pgErr.Message, "promoted during online backup") {
		return r, &Error{Kind: KindPrecondition, Err: err,
			Msg: "the standby was promoted while it was being backed up: PostgreSQL refuses such a backup as inconsistent; take a new backup"}
	}
	if err != nil {
		return r, &Error{Kind: KindPrecondition, Msg: "pg_backup_stop failed", Err: err}
	}
	r.lsn, err = ParseLSN(lsn)
	r.timeline = uint32(tli)
	return r, err
}

// restorePoint creates barman's restore point barman_<id> after the backup, so that a
// recovery can target the backup's end by name (on a primary only: standbys cannot write).
func (in *instance) restorePoint(ctx context.Context, name string) error {
	if in.inRecovery {
		return nil
	}
	_, err := in.conn.Exec(ctx, "SELECT pg_create_restore_point($1)", name)
	return err
}

func (in *instance) close(ctx context.Context) { _ = in.conn.Close(context.WithoutCancel(ctx)) }

// labelStart reads the start WAL file and timeline from a backup_label:
//
//	START WAL LOCATION: 0/2000028 (file 000000010000000000000002)
//	START TIMELINE: 1
func labelStart(label string) (wal string, tli uint32, err error) {
	for line := range strings.SplitSeq(label, "\n") {
		if rest, ok := strings.CutPrefix(line, "START WAL LOCATION: "); ok {
			if _, file, ok := strings.Cut(rest, "(file "); ok {
				wal = strings.TrimSuffix(strings.TrimSpace(file), ")")
			}
		}
		if rest, ok := strings.CutPrefix(line, "START TIMELINE: "); ok {
			n, perr := strconv.ParseUint(strings.TrimSpace(rest), 10, 32)
			if perr != nil {
				return "", 0, fmt.Errorf("backup_label: bad START TIMELINE %q", rest)
			}
			tli = uint32(n)
		}
	}
	if len(wal) != 24 || tli == 0 {
		return "", 0, errors.New("backup_label lacks START WAL LOCATION or START TIMELINE")
	}
	return wal, tli, nil
}
