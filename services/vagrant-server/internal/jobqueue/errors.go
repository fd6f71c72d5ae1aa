package jobqueue

import (
	"errors"
	"fmt"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// quoteID renders an id a client sent (a job or runner id) for an error message: bounded.
func quoteID(id string) string { return input.Quote(id) }

// Sentinel errors; match them with errors.Is. The gRPC layer maps each to one status code.
var (
	// ErrJobNotFound: no job has that id (NotFound).
	ErrJobNotFound = errors.New("job not found")
	// ErrRunnerNotFound: the runner never registered (NotFound); it must open RunnerConfig
	// first.
	ErrRunnerNotFound = errors.New("runner not registered")
	// ErrRunnerTaken: the runner id belongs to another registrant, the one that registered it
	// first (PermissionDenied): another runner id, not another try, is the way.
	ErrRunnerTaken = errors.New("runner id belongs to the credential that registered it first")
	// ErrUnknownOperation: the job's operation is one this server does not know, e.g. a newer
	// client's (Unimplemented: the request is well-formed, the server lacks the feature).
	ErrUnknownOperation = errors.New("unknown job operation")
	// ErrWrongState: the job is not in a state that allows the call, e.g. Ack of a job that
	// is no longer assigned to this runner; the error is a *StateError (FailedPrecondition).
	ErrWrongState = errors.New("job is not in the required state")
)

// UnknownOperationError names the unknown operation's field number. It matches
// ErrUnknownOperation.
type UnknownOperationError struct {
	// FieldNumber is the field number of the operation in hashicorp.vagrant.Job.
	FieldNumber int32
}

func (e *UnknownOperationError) Error() string {
	return fmt.Sprintf("job.operation: operation field %d is not supported by this server", e.FieldNumber)
}

// Is makes errors.Is(err, ErrUnknownOperation) true.
func (e *UnknownOperationError) Is(target error) bool { return target == ErrUnknownOperation }

// StateError says a job was in the wrong state (or held by another runner) for a call. It
// matches ErrWrongState.
type StateError struct {
	JobID string
	// Op is the refused call: "ack", "nack", "heartbeat", "complete" or "fail".
	Op string
	// State is the job's current state.
	State vagrant.Job_State
	// Runner is the job's assigned runner, when that is why the call was refused.
	Runner string
}

func (e *StateError) Error() string {
	msg := fmt.Sprintf("job %s: cannot %s a job in state %s", quoteID(e.JobID), e.Op, e.State)
	if e.Runner != "" {
		msg += " assigned to runner " + quoteID(e.Runner)
	}
	return msg
}

// Is makes errors.Is(err, ErrWrongState) true.
func (e *StateError) Is(target error) bool { return target == ErrWrongState }
