// Package grpc serves services.auth.AuthService (and Envoy's ext_authz) over the identity rules.
package grpc

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/grpcerr"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
	"github.com/plinth-dev/plinth/services/auth/internal/sso"
)

// badLoginMessage is the one answer for an unknown user, a wrong password and a disabled
// account, so that responses never reveal which usernames exist.
const badLoginMessage = "wrong username or password"

// toStatus maps domain errors to gRPC status errors in one place. Each code is chosen for what
// the client should do next:
//   - *identity.FieldError (an *input.Error) → InvalidArgument: fix the request; the message
//     names the field.
//   - identity.ErrBadLogin → Unauthenticated: the credentials are wrong; retrying the same fails.
//   - *identity.LockedError, *identity.BusyError → ResourceExhausted with RetryInfo and a
//     retry-after header: wait.
//   - *identity.TokenQuotaError → ResourceExhausted with its message (the limit, its setting,
//     what frees a place), without RetryInfo: no wait of ours frees a place, signing out
//     elsewhere, an admin's revoke or the tokens' expiry does.
//   - identity.ErrNoToken, identity.ErrBadToken → Unauthenticated with upstream's messages
//     (the admin API): sign in (again).
//   - *identity.RoleError, identity.ErrNotAdmin → PermissionDenied: the caller is known but
//     their role may not do this (authz's message: role, method, kind); signing in again will
//     not help.
//   - identity.ErrOwnAccount, identity.ErrOwnRole, identity.ErrLastAdmin → FailedPrecondition:
//     the request is valid, but not in this state (an admin disabling themselves or changing
//     their own role, the last enabled admin losing the role); another admin can do it, or
//     another user must become an admin first.
//   - identity.ErrNotFound → NotFound, identity.ErrExists → AlreadyExists.
//   - identity.ErrPasswordLoginOff → FailedPrecondition: password login is off here; sign in
//     through a provider instead.
//   - OpenID sign-in: *sso.StateError → FailedPrecondition (this callback cannot succeed;
//     begin again); *sso.RefusedError → Unauthenticated (the provider's answer signs nobody
//     in: a refused code, an ID token failing a check); *sso.NoRoleError and
//     identity.ErrAccountDisabled → PermissionDenied (the person is known but may not sign
//     in); *sso.NotFoundError → NotFound; *sso.UnavailableError → Unavailable (the provider
//     cannot be reached; retry later), its cause logged, never sent.
//   - anything else → grpcerr.Unexpected: context errors keep their codes, an unreachable
//     database is Unavailable, the rest Internal with a fixed message; the cause is logged with
//     the RPC and attrs (what the handler was working on), never sent.
func toStatus(ctx context.Context, log *slog.Logger, err error, attrs ...any) error {
	if err == nil {
		return nil
	}
	var locked *identity.LockedError
	var busy *identity.BusyError
	var denied *identity.RoleError
	var quota *identity.TokenQuotaError
	var (
		badState    *sso.StateError
		refused     *sso.RefusedError
		noRole      *sso.NoRoleError
		noProvider  *sso.NotFoundError
		unavailable *sso.UnavailableError
	)
	switch fe, isField := identity.IsFieldError(err); {
	case isField:
		return status.Error(codes.InvalidArgument, fe.Error())
	case errors.Is(err, identity.ErrBadLogin):
		return status.Error(codes.Unauthenticated, badLoginMessage)
	case errors.As(err, &locked):
		return retryStatus(ctx, "too many failed logins", locked.RetryAfter)
	case errors.As(err, &busy):
		return retryStatus(ctx, "too many logins at once", busy.RetryAfter)
	case errors.As(err, &quota):
		return status.Error(codes.ResourceExhausted, quota.Error())
	case errors.Is(err, identity.ErrNoToken):
		return status.Error(codes.Unauthenticated, authn.MsgNoToken)
	case errors.Is(err, identity.ErrBadToken):
		return status.Error(codes.Unauthenticated, authn.MsgInvalidToken)
	case errors.As(err, &denied):
		return status.Error(codes.PermissionDenied, denied.Error())
	case errors.Is(err, identity.ErrNotAdmin):
		return status.Error(codes.PermissionDenied, "admin rights required")
	case errors.Is(err, identity.ErrOwnAccount):
		return status.Error(codes.FailedPrecondition, "you cannot disable your own account; another admin can")
	case errors.Is(err, identity.ErrOwnRole):
		return status.Error(codes.FailedPrecondition, "you cannot change your own role; another admin can")
	case errors.Is(err, identity.ErrLastAdmin):
		return status.Error(codes.FailedPrecondition, "the last enabled admin cannot lose the admin role; make another user an admin first")
	case errors.Is(err, identity.ErrPasswordLoginOff):
		return status.Error(codes.FailedPrecondition, identity.ErrPasswordLoginOff.Error())
	case errors.As(err, &badState):
		return status.Error(codes.FailedPrecondition, badState.Error())
	case errors.As(err, &refused):
		return status.Error(codes.Unauthenticated, refused.Error())
	case errors.As(err, &noRole):
		return status.Error(codes.PermissionDenied, noRole.Error())
	case errors.Is(err, identity.ErrAccountDisabled):
		return status.Error(codes.PermissionDenied, identity.ErrAccountDisabled.Error())
	case errors.As(err, &noProvider):
		return status.Error(codes.NotFound, noProvider.Error())
	case errors.As(err, &unavailable):
		log.WarnContext(ctx, "OpenID provider unavailable", append([]any{"provider", unavailable.Provider, "error", unavailable.Cause}, attrs...)...)
		return status.Error(codes.Unavailable, "OpenID provider "+unavailable.Provider+" cannot be reached; retry later")
	case errors.Is(err, identity.ErrNotFound):
		return status.Error(codes.NotFound, "user not found")
	case errors.Is(err, identity.ErrExists):
		return status.Error(codes.AlreadyExists, "user already exists")
	}
	return grpcerr.Unexpected(ctx, log, err, attrs...)
}

// retryStatus is ResourceExhausted "<what>; retry after Ns" with a RetryInfo detail and a
// retry-after header, after rounded up to whole seconds.
func retryStatus(ctx context.Context, what string, after time.Duration) error {
	secs := int64((after + time.Second - 1) / time.Second)
	_ = grpc.SetHeader(ctx, metadata.Pairs("retry-after", strconv.FormatInt(secs, 10)))
	st := status.New(codes.ResourceExhausted, what+"; retry after "+strconv.FormatInt(secs, 10)+"s")
	if withInfo, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(secs) * time.Second)}); err == nil {
		st = withInfo
	}
	return st.Err()
}
