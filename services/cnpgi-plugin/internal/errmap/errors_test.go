package errmap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// TestToStatusMapsEachDomainErrorToOneCode pins, for every case ToStatus knows, the code, the
// message the client sees and whether the cause is logged. A message ending in "…" is a
// prefix; the others are exact. No message may carry the cause (SQL, endpoints, paths).
func TestToStatusMapsEachDomainErrorToOneCode(t *testing.T) {
	sqlCause := errors.New(`ERROR: permission denied for function pg_backup_start (SQLSTATE 42501)`)
	cases := []struct {
		name   string
		err    error
		code   codes.Code
		msg    string
		logged bool
	}{
		// *backup.Error: by its Kind, the public part only; the cause logged.
		{"backup invalid", &backup.Error{Kind: backup.KindInvalid, Field: "spec.bootstrap.recovery.recoveryTarget.targetLSN", Msg: "bad"},
			codes.InvalidArgument, "spec.bootstrap.recovery.recoveryTarget.targetLSN: bad", false},
		{"backup invalid with a cause", &backup.Error{Kind: backup.KindInvalid, Field: "f", Msg: "bad", Err: sqlCause},
			codes.InvalidArgument, "f: bad", true},
		{"backup precondition, wrapped", fmt.Errorf("take: %w", &backup.Error{Kind: backup.KindPrecondition, Msg: "pg_backup_start failed", Err: sqlCause}),
			codes.FailedPrecondition, "pg_backup_start failed", true},
		{"backup not found", &backup.Error{Kind: backup.KindNotFound, Msg: "no completed base backup"}, codes.NotFound, "no completed base backup", false},
		{"backup unavailable", &backup.Error{Kind: backup.KindUnavailable, Msg: "cannot connect to the PostgreSQL instance", Err: sqlCause},
			codes.Unavailable, "cannot connect to the PostgreSQL instance", true},
		{"backup unavailable without a cause", &backup.Error{Kind: backup.KindUnavailable, Msg: "the instance is restarting"},
			codes.Unavailable, "the instance is restarting", true},
		{"backup config", &backup.Error{Kind: backup.KindConfig, Msg: "no PGDATA"}, codes.FailedPrecondition, "no PGDATA", true},
		{"backup of no kind", &backup.Error{Msg: "odd"}, codes.Internal, "odd", false},
		// A backup error wins over the store error it wraps: its message is the better one.
		{"backup over a store error", &backup.Error{Kind: backup.KindPrecondition, Msg: "cannot list backups", Err: objectstore.ErrDenied},
			codes.FailedPrecondition, "cannot list backups", true},

		{"input", &input.Error{Field: "source_file_name", Reason: "bad"}, codes.InvalidArgument, "source_file_name: bad", false},
		{"input parameter", &input.Error{Field: "spec.plugins[0].parameters.x", Reason: "unknown"}, codes.InvalidArgument, "spec.plugins[0].parameters.x: unknown", false},
		{"plugin not used", fmt.Errorf("%w: no entry", cluster.ErrPluginNotUsed), codes.FailedPrecondition, "the cluster does not use this plugin…", false},
		{"unknown store", fmt.Errorf("%w \"x\" (configured: a)", stores.ErrUnknownStore), codes.FailedPrecondition, "unknown object store \"x\"…", false},
		{"wal not found", fmt.Errorf("get: %w", wal.ErrNotFound), codes.NotFound, wal.ErrNotFound.Error(), false},
		{"wal conflict", &wal.ConflictError{Server: "pg", Name: "000000010000000000000001"}, codes.AlreadyExists, `server "pg" already has a different…`, false},
		{"wal not empty", &wal.NotEmptyError{Store: "s", Server: "pg", Key: "pg/wals/x"}, codes.FailedPrecondition, "the WAL archive of server…", false},
		{"wal unreadable", &wal.UnreadableError{Server: "pg", Name: "000000010000000000000001", Key: "pg/wals/x.lzo"},
			codes.FailedPrecondition, `server "pg" has 000000010000000000000001 archived as…`, false},
		{"local invalid", &wal.LocalError{Field: "source_file_name", Message: `"/x" is outside PGDATA`, Invalid: true},
			codes.InvalidArgument, `source_file_name: "/x" is outside PGDATA`, false},
		{"local failure", &wal.LocalError{Field: "destination_file_name", Message: "no space left", Err: syscall.ENOSPC},
			codes.FailedPrecondition, "destination_file_name: no space left", true},
		{"source missing", fmt.Errorf("%w: open /x", wal.ErrSourceMissing), codes.FailedPrecondition, "the WAL file to archive does not exist on the instance", false},
		{"local file", fmt.Errorf("%w: %w", wal.ErrLocalFile, &fs.PathError{Op: "open", Path: "/pgdata/pg_wal/x", Err: syscall.EACCES}),
			codes.FailedPrecondition, "the plugin cannot read the WAL file or write the destination", true},

		{"deadline", context.DeadlineExceeded, codes.DeadlineExceeded, "deadline exceeded", false},
		{"canceled", context.Canceled, codes.Canceled, "request canceled", false},
		// A cancelled call is Canceled even when the store reported the dial it interrupted.
		{"canceled dial", fmt.Errorf("%w: %w", context.Canceled, &net.OpError{Op: "dial", Err: errors.New("operation was canceled")}),
			codes.Canceled, "request canceled", false},
		{"store denied", errors.Join(errors.New("403 at https://s3.example.com/bucket"), objectstore.ErrDenied),
			codes.FailedPrecondition, "the object store refused the plugin's credentials; check the store configuration", true},
		{"bucket missing", errors.Join(errors.New("NoSuchBucket at https://s3.example.com/bucket"), objectstore.ErrBucketMissing),
			codes.FailedPrecondition, "the object store's bucket does not exist; create it or fix the store configuration", true},
		{"decrypt", fmt.Errorf("%w: store \"main\": object a/b was written with key 1a2b", stores.ErrDecrypt),
			codes.FailedPrecondition, "cannot decrypt: store \"main\": object a/b was written with key 1a2b", true},
		{"store refused connection", fmt.Errorf("s3: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}),
			codes.Unavailable, "the object store is unreachable; retry later", true},
		{"store host unknown", fmt.Errorf("s3: %w", &net.DNSError{Name: "s3.example.com", Err: "no such host"}),
			codes.Unavailable, "the object store is unreachable; retry later", true},

		// grpcerr.Unexpected's tail.
		{"status passes", status.Error(codes.Aborted, "try again"), codes.Aborted, "try again", false},
		{"catalog unreachable", fmt.Errorf("query: %w", syscall.ECONNREFUSED), codes.Unavailable, "a dependency of the service is unavailable; retry later", true},
		{"plain path error", &fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, codes.Internal, "internal error", true},
		{"sql", errors.New(`ERROR: relation "wal_files" does not exist (SQLSTATE 42P01)`), codes.Internal, "internal error", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			st := status.Convert(ToStatus(context.Background(), log, c.err, "server", "pg"))
			want, prefix := strings.CutSuffix(c.msg, "…")
			if st.Code() != c.code || (prefix && !strings.HasPrefix(st.Message(), want)) || (!prefix && st.Message() != want) {
				t.Errorf("%v → %v %q, want %v %q", c.err, st.Code(), st.Message(), c.code, c.msg)
			}
			for _, secret := range []string{"SQLSTATE", "s3.example.com", "/pgdata"} {
				if strings.Contains(st.Message(), secret) {
					t.Errorf("the cause leaked to the client: %q", st.Message())
				}
			}
			if logged := logs.Len() > 0; logged != c.logged {
				t.Errorf("%v: logged=%v, want %v", c.err, logged, c.logged)
			}
			if c.logged && !strings.Contains(logs.String(), "server=pg") {
				t.Errorf("the log does not say what the handler was doing: %s", logs.String())
			}
		})
	}
	if ToStatus(context.Background(), slog.New(slog.DiscardHandler), nil) != nil {
		t.Error("nil must map to nil")
	}
}

// TestPublicMessage pins what a caller sees of an error reported beside a result (a failed
// retention after a successful backup): a backup error's public part, else a fixed sentence.
func TestPublicMessage(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&backup.Error{Kind: backup.KindInvalid, Field: "retentionPolicy", Msg: "bad unit", Err: errors.New("x")}, "retentionPolicy: bad unit"},
		{fmt.Errorf("retain: %w", &backup.Error{Kind: backup.KindPrecondition, Msg: "cannot list backups", Err: objectstore.ErrDenied}), "cannot list backups"},
		{errors.New("403 at https://s3.example.com/bucket"), "retention could not finish; the plugin's log has the cause"},
	}
	for _, c := range cases {
		if got := PublicMessage(c.err); got != c.want {
			t.Errorf("PublicMessage(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestUnreachableCatalogIsNotTheStore: a catalog database that refuses connections (a real
// connection attempt, whose error wraps a *net.OpError like an unreachable S3 endpoint's) is
// said to be the catalog, never "the object store is unreachable".
func TestUnreachableCatalogIsNotTheStore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, cerr := pgconn.Connect(ctx, "postgres://plinth:hunter2@"+addr+"/cnpgi?sslmode=disable")
	if cerr == nil {
		t.Fatal("connecting to a closed port succeeded")
	}
	var logs bytes.Buffer
	got := status.Convert(ToStatus(ctx, slog.New(slog.NewTextHandler(&logs, nil)), fmt.Errorf("catalog: record: %w", cerr)))
	if got.Code() != codes.Unavailable || !strings.Contains(got.Message(), "catalog database is unreachable") ||
		strings.Contains(got.Message(), "object store") {
		t.Errorf("unreachable catalog: %v %q", got.Code(), got.Message())
	}
	if strings.Contains(got.Message()+logs.String(), "hunter2") {
		t.Error("the database password leaked into the status or the logs")
	}
}
