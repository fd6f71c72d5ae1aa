package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	middleware "github.com/grpc-ecosystem/go-grpc-middleware/v2"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
)

// AuthFunc authenticates one call. fullMethod is "/pkg.Service/Method", so the function can
// also authorize per method. It returns the context the handler should see (typically with
// the caller's identity added) or a status error: codes.Unauthenticated when credentials are
// missing or invalid, codes.PermissionDenied when they are valid but insufficient,
// codes.Unavailable when the token store cannot be reached. Any other error is logged and the
// client gets a bare Internal, so a raw error can never leak to the caller.
type AuthFunc func(ctx context.Context, fullMethod string) (context.Context, error)

func (f AuthFunc) check(ctx context.Context, log *slog.Logger, method string) (context.Context, error) {
	newCtx, err := f(ctx, method)
	if err == nil {
		return newCtx, nil
	}
	if _, ok := status.FromError(err); !ok {
		log.ErrorContext(ctx, "auth hook returned a non-status error", "grpc.method", method, "error", err)
		return nil, status.Error(codes.Internal, "internal error")
	}
	return nil, err
}

func (f AuthFunc) unary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, err := f.check(ctx, log, info.FullMethod)
		if err != nil {
			return nil, err
		}
		resp, err := handler(ctx, req)
		if ended := EndedBy(ctx); ended != nil {
			return nil, ended
		}
		return resp, err
	}
}

func (f AuthFunc) stream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, err := f.check(ss.Context(), log, info.FullMethod)
		if err != nil {
			return err
		}
		wrapped := middleware.WrapServerStream(ss)
		wrapped.WrappedContext = ctx
		err = handler(srv, wrapped)
		if ended := EndedBy(ctx); ended != nil {
			return ended
		}
		return err
	}
}

// EndedBy is the status the auth hook ended ctx with, if it did: an AuthFunc may return a
// context that it ends later, with a status error as the cause, when the credentials that
// authenticated the call end (authn.Lifetimes: a revoked token ends its streams with
// Unauthenticated). The call then answers that status whatever the handler made of its
// context ending (Canceled, or a service's "shutting down"): the client must learn to sign
// in again, not to retry. A context ended otherwise (the client went away) changes nothing.
// A proxy that authenticates calls itself (the gateway) answers with it the same way.
func EndedBy(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	if _, ok := status.FromError(cause); !ok || status.Code(cause) == codes.OK {
		return nil
	}
	return cause
}

// alwaysExempt reports services that stay reachable without credentials: orchestrators probe
// health and grpcurl discovers services before it has a token.
func alwaysExempt(service string) bool {
	switch service {
	case healthpb.Health_ServiceDesc.ServiceName,
		reflectionv1.ServerReflection_ServiceDesc.ServiceName,
		reflectionv1alpha.ServerReflection_ServiceDesc.ServiceName:
		return true
	}
	return false
}

// authRequired matches the calls the auth hook must see.
func authRequired(exempt map[string]bool) selector.Matcher {
	return selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool {
		return !alwaysExempt(c.Service) && !exempt[c.FullMethod()]
	})
}

// exemptSet validates AuthExempt: a typo would otherwise silently keep a method locked (or,
// worse, make someone widen the list until the wrong method is open).
func exemptSet(methods []string) (map[string]bool, error) {
	set := make(map[string]bool, len(methods))
	for _, m := range methods {
		svc, method, ok := strings.Cut(strings.TrimPrefix(m, "/"), "/")
		if !strings.HasPrefix(m, "/") || !ok || svc == "" || method == "" || strings.Contains(method, "/") {
			return nil, fmt.Errorf("server: AuthExempt entry %q is not a full method name like \"/services.auth.AuthService/Login\"", m)
		}
		set[m] = true
	}
	return set, nil
}
