package operation

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
)

// command runs a machine command on the job's target and reports the machine's state after it.
func (e *Executor) command(ctx context.Context, job *vagrant.Job, op *vagrant.Job_CommandOp, env []string, out Output) (*vagrant.Job_Result, error) {
	cmd, ok := findCommand(op.GetCommand())
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "vagrant-runner does not run command %q; it runs: %s", op.GetCommand(), commandNames())
	}
	ref := op.GetTarget()
	if ref == nil {
		ref = job.GetTarget()
	}
	if ref == nil {
		return nil, status.Errorf(codes.FailedPrecondition,
			"command %q acts on a machine: queue it scoped to a target (command.target or job.target)", op.GetCommand())
	}
	m, err := e.machine(ctx, ref, op.GetComponent())
	if err != nil {
		return nil, err
	}
	say(out, "==> %s: %s (provider %s, machine %s)", m.target.GetName(), op.GetCommand(), m.provider.Name(), m.id)
	code, runErr := cmd.run(ctx, m, call{args: op.GetCliArgs(), env: env, out: out})
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	var usage usageError
	if errors.As(runErr, &usage) {
		return nil, status.Error(codes.InvalidArgument, usage.msg)
	}
	st, stErr := m.provider.Status(ctx, m.id)
	if stErr != nil {
		return nil, status.Errorf(codes.Unavailable, "%s ran (exit %d) but the machine's state cannot be read: %v", op.GetCommand(), code, stErr)
	}
	if err := e.report(ctx, m, st, op.GetCommand() == "destroy" && runErr == nil); err != nil {
		return nil, err
	}
	say(out, "==> %s: %s", m.target.GetName(), st.Long)
	namedValues(out, "machine", m.id, "state", st.ID, "provider", m.provider.Name())

	res := &vagrant.Job_CommandResult{RunResult: runErr == nil && code == 0, ExitCode: int32(code)}
	switch {
	case runErr != nil:
		sayStyled(out, "error", "%s failed: %v", op.GetCommand(), runErr)
		res.RunError = status.New(runCode(runErr), fmt.Sprintf("%s: %v", op.GetCommand(), runErr)).Proto()
	case code != 0:
		res.RunError = status.Newf(codes.Unknown, "%s: the command exited with status %d", op.GetCommand(), code).Proto()
	}
	return &vagrant.Job_Result{Run: res}, nil
}

// runCode classifies a command's failure: a machine in the wrong state is the caller's to fix.
func runCode(err error) codes.Code {
	if errors.Is(err, provider.ErrNotRunning) {
		return codes.FailedPrecondition
	}
	return codes.Unknown
}
