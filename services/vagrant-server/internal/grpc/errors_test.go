package grpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

func TestToStatusMapsEachDomainErrorToOneCode(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
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
		{tokens.ErrExpired, codes.Unauthenticated, "token has expired"},
		{fmt.Errorf("%w: bad signature", tokens.ErrInvalid), codes.Unauthenticated, "invalid authentication token"},
		{&jobqueue.ValidationError{Field: "job.id", Reason: "must be empty"}, codes.InvalidArgument, "job.id: must be empty"},
		{&jobqueue.UnknownOperationError{FieldNumber: 80}, codes.Unimplemented, "job.operation: operation field 80 is not supported by this server"},
		{fmt.Errorf("job X: %w", jobqueue.ErrJobNotFound), codes.NotFound, "job X: job not found"},
		{fmt.Errorf("runner r: %w", jobqueue.ErrRunnerNotFound), codes.NotFound, "runner r: runner not registered: register it with RunnerConfig first"},
		{&jobqueue.StateError{JobID: "J", Op: "ack", State: vagrant.Job_ERROR}, codes.FailedPrecondition, "job J: cannot ack a job in state ERROR"},
		{context.Canceled, codes.Canceled, "request canceled"},
		{fmt.Errorf("select: %w", context.DeadlineExceeded), codes.DeadlineExceeded, "deadline exceeded"},
		{errors.New(`ERROR: relation "basis" does not exist (SQLSTATE 42P01)`), codes.Internal, "internal error"},
	}
	for _, c := range cases {
		st := status.Convert(toStatus(context.Background(), log, c.err))
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
