package grpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/sessions"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

func TestToStatusMapsEachErrorToOneCode(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	cases := []struct {
		err  error
		code codes.Code
		msg  string
	}{
		{nil, codes.OK, ""},
		{registry.Invalid("basis.name", "required to create a basis"), codes.InvalidArgument, "basis.name: required to create a basis"},
		{fmt.Errorf("%w (got %q)", tokens.ErrBadDuration, "x"), codes.InvalidArgument, `duration: ` + tokens.ErrBadDuration.Error() + ` (got "x")`},
		{registry.NotFound("basis", `resource_id "X"`), codes.NotFound, `basis with resource_id "X" not found`},
		{fmt.Errorf("wrapped: %w", registry.Conflict("basis.name", "dev", "basis")), codes.FailedPrecondition, `basis.name: "dev" is already used by another basis`},
		{registry.Precondition("project.basis", "a project cannot move to another basis"), codes.FailedPrecondition, "project.basis: a project cannot move to another basis"},
		{tokens.ErrBootstrapped, codes.PermissionDenied, "server is already bootstrapped"},
		{&jobqueue.QuotaError{Owner: "user:u1", Held: 100, Limit: 100}, codes.ResourceExhausted,
			`quota: "user:u1" holds 100 unfinished jobs, at most 100 allowed (PLINTH_VAGRANT_MAX_QUEUED_JOBS_PER_USER); wait for some to finish or cancel them`},
		{&tokens.QuotaError{Owner: "user:u1", Name: "vera", Live: 100, Limit: 100}, codes.ResourceExhausted,
			"quota: user vera holds 100 live Vagrant tokens, at most 100 allowed (PLINTH_VAGRANT_MAX_TOKENS_PER_USER); let some expire, sign out elsewhere or ask an admin to revoke them"},
		{tokens.Allow(authz.Viewer, "QueueJob"), codes.PermissionDenied, "role viewer may not call /hashicorp.vagrant.Vagrant/QueueJob (write)"},
		{fmt.Errorf("runner r: %w", jobqueue.ErrRunnerTaken), codes.PermissionDenied, "runner r: runner id belongs to the credential that registered it first"},
		{fmt.Errorf("%w (role admin asked by a token of role operator)", tokens.ErrRoleTooHigh), codes.PermissionDenied, tokens.ErrRoleTooHigh.Error() + " (role admin asked by a token of role operator)"},
		{sessions.ErrSessionEnded, codes.Unauthenticated, sessions.ErrSessionEnded.Error()},
		{sessions.ErrNoExpiry, codes.FailedPrecondition, sessions.ErrNoExpiry.Error()},
		{fmt.Errorf("no signing key: %w", tokens.ErrUnknownKey), codes.FailedPrecondition, "vagrant-server is not bootstrapped yet (BootstrapToken): it has no key to sign tokens with"},
		{tokens.ErrExpired, codes.Unauthenticated, "token has expired"},
		{fmt.Errorf("%w: bad signature", tokens.ErrInvalid), codes.Unauthenticated, "invalid authentication token"},
		{&jobqueue.UnknownOperationError{FieldNumber: 80}, codes.Unimplemented, "job.operation: operation field 80 is not supported by this server"},
		{fmt.Errorf("job X: %w", jobqueue.ErrJobNotFound), codes.NotFound, "job X: job not found"},
		{fmt.Errorf("runner r: %w", jobqueue.ErrRunnerNotFound), codes.NotFound, "runner r: runner not registered: register it with RunnerConfig first"},
		{&jobqueue.StateError{JobID: "J", Op: "ack", State: vagrant.Job_ERROR}, codes.FailedPrecondition, `job "J": cannot ack a job in state ERROR`},
		{context.Canceled, codes.Canceled, "request canceled"},
		{fmt.Errorf("select: %w", context.DeadlineExceeded), codes.DeadlineExceeded, "deadline exceeded"},
		{errors.New(`ERROR: relation "basis" does not exist (SQLSTATE 42P01)`), codes.Internal, "internal error"},
		{input.Invalid("job_id", "is required"), codes.InvalidArgument, "job_id: is required"},
		{&protocolError{msg: errClientOutdated}, codes.InvalidArgument, errClientOutdated},
		{errNoToken, codes.Unauthenticated, "Authorization token is not supplied"},
		{&notServedError{method: "/other.Service/Call"}, codes.PermissionDenied, `"/other.Service/Call" is not served here`},
		{streamErrorf("the first message of RunnerConfig must be open"), codes.FailedPrecondition, "the first message of RunnerConfig must be open"},
		{errStopping, codes.Unavailable, "vagrant-server is shutting down; reconnect"},
		{fmt.Errorf("load key: %w", &pgconn.ConnectError{}), codes.Unavailable, "a dependency of the service is unavailable; retry later"},
		{fmt.Errorf("read: %w", refused), codes.Unavailable, "a dependency of the service is unavailable; retry later"},
		{&pgconn.PgError{Code: "23505", Message: "duplicate key"}, codes.Internal, "internal error"},
		// The cases above in their other forms.
		{tokens.ErrBadDuration, codes.InvalidArgument, "duration: " + tokens.ErrBadDuration.Error()},
		{fmt.Errorf("negotiate: %w", &protocolError{msg: errServerOutdated}), codes.InvalidArgument, errServerOutdated},
		{jobqueue.ErrUnknownOperation, codes.Unimplemented, "unknown job operation"},
		{registry.ErrNotFound, codes.NotFound, "not found"},
		{jobqueue.ErrWrongState, codes.FailedPrecondition, "job is not in the required state"},
		{&jobqueue.StateError{JobID: "J", Op: "heartbeat", State: vagrant.Job_RUNNING, Runner: "r2"}, codes.FailedPrecondition,
			`job "J": cannot heartbeat a job in state RUNNING assigned to runner "r2"`},
		{fmt.Errorf("open: %w", tokens.ErrExpired), codes.Unauthenticated, "open: token has expired"},
		{tokens.ErrInvalid, codes.Unauthenticated, "invalid authentication token"},
		{fmt.Errorf("stream: %w", errStopping), codes.Unavailable, "stream: vagrant-server is shutting down; reconnect"},
		// A status from elsewhere (auth's token check) passes through unchanged.
		{status.Error(codes.Unauthenticated, "token revoked"), codes.Unauthenticated, "token revoked"},
		{fmt.Errorf("ask auth: %w", status.Error(codes.Unavailable, "auth unreachable")), codes.Unavailable, "auth unreachable"},
		// The first rule that matches wins: a client's mistake is named before a lookup's miss.
		{errors.Join(input.Invalid("job_id", "is required"), jobqueue.ErrJobNotFound), codes.InvalidArgument, "job_id: is required"},
	}
	for _, c := range cases {
		st := status.Convert(toStatus(context.Background(), log, c.err, "doing", "test"))
		if st.Code() != c.code || st.Message() != c.msg {
			t.Errorf("%v → %v %q, want %v %q", c.err, st.Code(), st.Message(), c.code, c.msg)
		}
	}
}

func TestNegotiate(t *testing.T) {
	server := apiProtocol // 1..1
	cases := []struct {
		header  string
		version uint32
		parses  bool
		reason  string
	}{
		{"1,1", 1, true, ""},
		{" 1 , 1 ", 1, true, ""},
		{"1,5", 1, true, ""}, // a newer client that still speaks 1
		{"0,1", 1, true, ""}, // an older range that reaches 1
		{"0,0", 0, true, errClientOutdated},
		{"2,3", 0, true, errServerOutdated},
		{"1", 0, false, ""},
		{"", 0, false, ""},
		{"a,b", 0, false, ""},
		{"-1,1", 0, false, ""},
	}
	for _, c := range cases {
		client, err := parseProtocol(c.header)
		if (err == nil) != c.parses {
			t.Errorf("parse %q: %v", c.header, err)
			continue
		}
		if err != nil {
			continue
		}
		v, reason := negotiate(client, server)
		if v != c.version || reason != c.reason {
			t.Errorf("negotiate %q = %d %q, want %d %q", c.header, v, reason, c.version, c.reason)
		}
	}
}

// The mapping logs the server's own failures with what the handler was doing and the
// resource; client mistakes are not logged as failures.
func TestToStatusLogsWhatTheHandlerWasDoing(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	_ = toStatus(context.Background(), log, errors.New("boom"), "doing", "cancel job", "job_id", input.Quote("01J"))
	line := buf.String()
	for _, want := range []string{`"doing":"cancel job"`, `"job_id":"\"01J\""`, `"error":"boom"`} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %s lacks %s", line, want)
		}
	}
	buf.Reset()
	_ = toStatus(context.Background(), log, input.Invalid("job_id", "is required"), "doing", "cancel job")
	if buf.Len() != 0 {
		t.Errorf("a client mistake was logged as a failure: %s", buf.String())
	}
}

// Why a token is invalid is logged at debug with what the handler was doing, never sent.
func TestToStatusLogsWhyATokenIsInvalidAtDebug(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	err := toStatus(context.Background(), log, fmt.Errorf("%w: bad signature", tokens.ErrInvalid), "doing", "authenticate the call", "runner_id", "r1")
	if st := status.Convert(err); st.Code() != codes.Unauthenticated || strings.Contains(st.Message(), "signature") {
		t.Errorf("status %v %q; want Unauthenticated without the reason", st.Code(), st.Message())
	}
	line := buf.String()
	for _, want := range []string{`"level":"DEBUG"`, `"msg":"token refused"`, `"doing":"authenticate the call"`,
		`"reason":"invalid authentication token: bad signature"`, `"runner_id":"r1"`} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %s lacks %s", line, want)
		}
	}
}
