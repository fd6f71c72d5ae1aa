package grpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/grpcerr"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/sessions"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// Errors of the server's own rules, mapped in toStatus with the domain errors.
var (
	// errNoToken is a call without a login token: Unauthenticated, upstream's message.
	errNoToken = errors.New("Authorization token is not supplied")
	// errStopping ends long-lived streams when the server shuts down: Unavailable, since the
	// same call to another replica (or this one, restarted) will work.
	errStopping = errors.New("vagrant-server is shutting down; reconnect")
)

// protocolError is a client-api-protocol header that cannot be negotiated: InvalidArgument,
// with upstream's message.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return e.msg }

// notServedError is a call to a service this server does not serve: PermissionDenied.
type notServedError struct{ method string }

func (e *notServedError) Error() string { return input.Quote(e.method) + " is not served here" }

// streamError is a stream message the protocol does not allow at that point (the first
// message is not request or open, an event out of order) or a job no longer the stream's:
// FailedPrecondition, as upstream answers.
type streamError struct{ msg string }

func (e *streamError) Error() string { return e.msg }

func streamErrorf(format string, args ...any) error {
	return &streamError{msg: fmt.Sprintf(format, args...)}
}

// toStatus is the one place an error becomes the status a client gets; attrs say, for the
// log, what the handler was doing ("doing", then the resource it worked on, client strings
// quoted with input.Quote). Each code says what the client should do next:
//   - *input.Error — a malformed request, from the checks at the edge, the registry or the
//     job queue — and tokens.ErrBadDuration → InvalidArgument naming the field: fix it.
//   - registry.ErrNotFound, jobqueue.ErrJobNotFound → NotFound, as upstream answers a
//     missing resource; jobqueue.ErrRunnerNotFound too (a runner must register through
//     RunnerConfig before asking for work).
//   - *registry.PreconditionError (a taken name, a missing parent, a move),
//     jobqueue.ErrWrongState (a report on a job no longer the runner's), *streamError →
//     FailedPrecondition: well-formed, but the state refuses it; upstream uses the same code.
//   - jobqueue.ErrUnknownOperation → Unimplemented: a newer client's operation; a retry
//     will not help.
//   - tokens.ErrBootstrapped (upstream's answer to a second bootstrap), *notServedError →
//     PermissionDenied; so is *tokens.NotAllowedError, a token whose role (its session's or
//     its grant's) may not call the method (authz's message, as every Plinth service answers it), and
//     jobqueue.ErrRunnerTaken, a runner id another credential registered first: the caller
//     is known and may not, and no retry will change that; tokens.ErrRoleTooHigh too.
//   - sessions.ErrSessionEnded (the Plinth token was revoked or expires now),
//     errNoAccount → Unauthenticated: sign in again.
//   - sessions.ErrNoExpiry → FailedPrecondition: auth does not say when the session ends
//     (an older auth); upgrading it, not retrying, helps. tokens.ErrUnknownKey (signing
//     before BootstrapToken made the key) → FailedPrecondition too: bootstrap first.
//   - errNoToken, tokens.ErrExpired, tokens.ErrInvalid → Unauthenticated, upstream's
//     messages (why a token is invalid is logged at debug, never sent).
//   - *protocolError → InvalidArgument, upstream's negotiation messages.
//   - *jobqueue.QuotaError, *tokens.QuotaError → ResourceExhausted with its message (the
//     limit, its setting, what frees a place), without RetryInfo: the caller's own jobs
//     finishing or tokens expiring frees places, not a wait of ours.
//   - errStopping → Unavailable.
//   - anything else → grpcerr.Unexpected: context codes kept; Unavailable only for errors
//     known to be transient (the database or NATS unreachable); else Internal with a fixed
//     message, the cause logged with the RPC and what the handler was doing.
func toStatus(ctx context.Context, log *slog.Logger, err error, attrs ...any) error {
	if err == nil {
		return nil
	}
	var (
		ie  *input.Error
		pe  *registry.PreconditionError
		pre *protocolError
		nse *notServedError
		se  *streamError
		nae *tokens.NotAllowedError
		jqe *jobqueue.QuotaError
		tqe *tokens.QuotaError
	)
	switch {
	case errors.As(err, &ie):
		return ie.GRPCStatus().Err()
	case errors.Is(err, tokens.ErrBadDuration):
		return status.Error(codes.InvalidArgument, "duration: "+err.Error())
	case errors.As(err, &pre):
		return status.Error(codes.InvalidArgument, pre.msg)
	case errors.Is(err, jobqueue.ErrUnknownOperation):
		return status.Error(codes.Unimplemented, err.Error())
	case errors.Is(err, jobqueue.ErrJobNotFound), errors.Is(err, registry.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, jobqueue.ErrRunnerNotFound):
		return status.Error(codes.NotFound, err.Error()+": register it with RunnerConfig first")
	case errors.As(err, &pe):
		return status.Error(codes.FailedPrecondition, pe.Error())
	case errors.As(err, &se):
		return status.Error(codes.FailedPrecondition, se.msg)
	case errors.Is(err, jobqueue.ErrWrongState):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, tokens.ErrBootstrapped), errors.As(err, &nse), errors.As(err, &nae),
		errors.Is(err, jobqueue.ErrRunnerTaken), errors.Is(err, tokens.ErrRoleTooHigh):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, sessions.ErrSessionEnded), errors.Is(err, errNoAccount):
		return status.Error(codes.Unauthenticated, err.Error())
	case errors.Is(err, sessions.ErrNoExpiry):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, tokens.ErrUnknownKey):
		return status.Error(codes.FailedPrecondition, "vagrant-server is not bootstrapped yet (BootstrapToken): it has no key to sign tokens with")
	case errors.Is(err, errNoToken), errors.Is(err, tokens.ErrExpired):
		return status.Error(codes.Unauthenticated, err.Error())
	case errors.Is(err, tokens.ErrInvalid):
		log.DebugContext(ctx, "token refused", append(append([]any{}, attrs...), "reason", err.Error())...)
		return status.Error(codes.Unauthenticated, tokens.ErrInvalid.Error())
	case errors.As(err, &jqe):
		return status.Error(codes.ResourceExhausted, jqe.Error())
	case errors.As(err, &tqe):
		return status.Error(codes.ResourceExhausted, tqe.Error())
	case errors.Is(err, errStopping):
		return status.Error(codes.Unavailable, err.Error())
	}
	return grpcerr.Unexpected(ctx, log, err, attrs...)
}
