package grpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
)

func TestToStatusMapsBackupErrorsByKind(t *testing.T) {
	cause := errors.New(`ERROR: permission denied for function pg_backup_start (SQLSTATE 42501)`)
	cases := []struct {
		err    error
		code   codes.Code
		msg    string
		logged bool
	}{
		{&backup.Error{Kind: backup.KindInvalid, Field: "spec.bootstrap.recovery.recoveryTarget.targetLSN", Msg: "bad"}, codes.InvalidArgument, "spec.bootstrap.recovery.recoveryTarget.targetLSN: bad", false},
		{fmt.Errorf("take: %w", &backup.Error{Kind: backup.KindPrecondition, Msg: "pg_backup_start failed", Err: cause}), codes.FailedPrecondition, "pg_backup_start failed", true},
		{&backup.Error{Kind: backup.KindNotFound, Msg: "no completed base backup"}, codes.NotFound, "no completed base backup", false},
		{&backup.Error{Kind: backup.KindUnavailable, Msg: "cannot connect to the PostgreSQL instance", Err: cause}, codes.Unavailable, "cannot connect", true},
		{&backup.Error{Kind: backup.KindConfig, Msg: "no PGDATA"}, codes.FailedPrecondition, "no PGDATA", true},
	}
	for _, c := range cases {
		var logs bytes.Buffer
		st := status.Convert(toStatus(context.Background(), slog.New(slog.NewTextHandler(&logs, nil)), c.err))
		if st.Code() != c.code || !strings.HasPrefix(st.Message(), c.msg) || strings.Contains(st.Message(), "SQLSTATE") {
			t.Errorf("%v → %v %q, want %v %q… without the cause", c.err, st.Code(), st.Message(), c.code, c.msg)
		}
		if logged := logs.Len() > 0; logged != c.logged {
			t.Errorf("%v: logged=%v, want %v", c.err, logged, c.logged)
		}
	}
}
