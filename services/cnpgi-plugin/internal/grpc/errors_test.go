package grpc

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

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

func TestToStatusMapsEachDomainErrorToOneCode(t *testing.T) {
	cases := []struct {
		err    error
		code   codes.Code
		msg    string // prefix of the message
		logged bool
	}{
		{&input.Error{Field: "source_file_name", Reason: "bad"}, codes.InvalidArgument, "source_file_name: bad", false},
		{&input.Error{Field: "spec.plugins[0].parameters.x", Reason: "unknown"}, codes.InvalidArgument, "spec.plugins[0].parameters.x", false},
		{fmt.Errorf("%w: no entry", cluster.ErrPluginNotUsed), codes.FailedPrecondition, "the cluster does not use this plugin", false},
		{fmt.Errorf("%w \"x\" (configured: a)", stores.ErrUnknownStore), codes.FailedPrecondition, "unknown object store \"x\"", false},
		{fmt.Errorf("get: %w", wal.ErrNotFound), codes.NotFound, "WAL file not found", false},
		{&wal.ConflictError{Server: "pg", Name: "000000010000000000000001"}, codes.AlreadyExists, `server "pg" already has a different`, false},
		{&wal.NotEmptyError{Store: "s", Server: "pg", Key: "pg/wals/x"}, codes.FailedPrecondition, "the WAL archive of server", false},
		{fmt.Errorf("%w: open /x", wal.ErrSourceMissing), codes.FailedPrecondition, "the WAL file to archive does not exist", false},
		{fmt.Errorf("%w: %w", wal.ErrLocalFile, &fs.PathError{Op: "open", Path: "/pgdata/pg_wal/x", Err: syscall.EACCES}), codes.FailedPrecondition, "the plugin cannot read the WAL file", true},
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, codes.Internal, "internal error", true},
		{errors.Join(errors.New("403 at https://s3.example.com/bucket"), objectstore.ErrDenied), codes.FailedPrecondition, "the object store refused", true},
		{errors.Join(errors.New("NoSuchBucket"), objectstore.ErrBucketMissing), codes.FailedPrecondition, "the object store's bucket", true},
		{fmt.Errorf("s3: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), codes.Unavailable, "the object store is unreachable", true},
		{fmt.Errorf("%w: store \"main\": object a/b was written with key 1a2b", stores.ErrDecrypt), codes.FailedPrecondition, "cannot decrypt: store", true},
		{context.DeadlineExceeded, codes.DeadlineExceeded, "deadline exceeded", false},
		{context.Canceled, codes.Canceled, "request canceled", false},
		{&wal.LocalError{Field: "source_file_name", Message: `"/x" is outside PGDATA`, Invalid: true}, codes.InvalidArgument, `source_file_name: "/x" is outside PGDATA`, false},
		{&wal.LocalError{Field: "destination_file_name", Message: "no space left", Err: syscall.ENOSPC}, codes.FailedPrecondition, "destination_file_name: no space left", true},
		{&wal.UnreadableError{Server: "pg", Name: "000000010000000000000001", Key: "pg/wals/x.lzo"}, codes.FailedPrecondition, `server "pg" has 000000010000000000000001 archived as`, false},
		{errors.New(`ERROR: relation "wal_files" does not exist (SQLSTATE 42P01)`), codes.Internal, "internal error", true},
	}
	for _, c := range cases {
		var logs bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, nil))
		st := status.Convert(toStatus(context.Background(), log, c.err))
		if st.Code() != c.code || !strings.HasPrefix(st.Message(), c.msg) {
			t.Errorf("%v → %v %q, want %v %q…", c.err, st.Code(), st.Message(), c.code, c.msg)
		}
		if logged := logs.Len() > 0; logged != c.logged {
			t.Errorf("%v: logged=%v, want %v", c.err, logged, c.logged)
		}
		if c.code == codes.Internal && strings.Contains(st.Message(), "SQLSTATE") {
			t.Errorf("internal detail leaked: %q", st.Message())
		}
	}
	if toStatus(context.Background(), slog.New(slog.DiscardHandler), nil) != nil {
		t.Error("nil must map to nil")
	}
}
