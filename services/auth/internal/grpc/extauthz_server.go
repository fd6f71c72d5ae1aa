package grpc

import (
	"context"
	"log/slog"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	_ "github.com/plinth-dev/plinth/libs/api/all" // Envoy asks about every API's methods: their kinds (libs/api/access)
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// ExtAuthzServer implements envoy.service.auth.v3.Authorization so the Envoy gateway can refuse
// calls without a live token before routing them. Public paths (login, health, reflection, and
// whatever is configured) pass without a token.
type ExtAuthzServer struct {
	authv3.UnimplementedAuthorizationServer
	svc    *identity.Service
	log    *slog.Logger
	public map[string]bool
	prefix []string
}

// NewExtAuthzServer lets publicPaths through: exact gRPC paths ("/pkg.Svc/Method") or
// prefixes ending in "/" ("/grpc.health.v1.Health/").
func NewExtAuthzServer(svc *identity.Service, publicPaths []string, log *slog.Logger) *ExtAuthzServer {
	s := &ExtAuthzServer{svc: svc, log: log, public: map[string]bool{}}
	for _, p := range publicPaths {
		if strings.HasSuffix(p, "/") {
			s.prefix = append(s.prefix, p)
		} else {
			s.public[p] = true
		}
	}
	return s
}

// DefaultPublicPaths are callable without a token through the gateway.
func DefaultPublicPaths() []string {
	return []string{
		"/services.auth.AuthService/Login",
		"/services.auth.AuthService/CheckToken",
		"/api.services.auth.v1.AuthService/Login",
		"/api.services.auth.v1.AuthService/CheckToken",
		"/plinth.auth.v1.OIDCService/ListProviders",
		"/plinth.auth.v1.OIDCService/BeginSignIn",
		"/plinth.auth.v1.OIDCService/CompleteSignIn",
		"/grpc.health.v1.Health/",
		"/grpc.reflection.v1.ServerReflection/",
		"/grpc.reflection.v1alpha.ServerReflection/",
	}
}

// Check allows or denies one HTTP request Envoy is about to route.
func (s *ExtAuthzServer) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	http := req.GetAttributes().GetRequest().GetHttp()
	method := callPath(http.GetPath())
	if s.isPublic(method) {
		return allow(authn.Account{}), nil
	}
	token := bearerFromHeader(http.GetHeaders()["authorization"])
	if token == "" {
		return deny(authn.MsgNoToken), nil
	}
	a, ok, err := s.svc.CheckToken(ctx, token)
	if err != nil {
		s.log.ErrorContext(ctx, "ext_authz token check failed", "error", err)
		return &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(codes.Unavailable), Message: "authentication unavailable"}}, nil
	}
	if !ok {
		return deny(authn.MsgInvalidToken), nil
	}
	// The same rule as the gateway's and every service's interceptor: the path of a gRPC,
	// gRPC-Web or Connect call is its full method.
	if err := authz.Check(a.Role, method); err != nil {
		return forbid(err.Error()), nil
	}
	return allow(a), nil
}

// callPath is the call a request path names: without its query string, and without one
// leading authz.APIPrefix (Envoy rewrites the path only after ext_authz has seen it).
func callPath(path string) string {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	path, _ = authz.TrimAPIPrefix(path)
	return path
}

func (s *ExtAuthzServer) isPublic(path string) bool {
	if s.public[path] {
		return true
	}
	for _, p := range s.prefix {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

func bearerFromHeader(v string) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// allow lets the request through with the account's id, name and role set upstream
// (overwriting any copy the client sent), for the backends' audit trails and checks. A public
// path has no account and sets nothing.
func allow(a authn.Account) *authv3.CheckResponse {
	ok := &authv3.OkHttpResponse{}
	if a.ID != "" {
		for _, kv := range [][2]string{{authn.AccountHeader, a.ID}, {authn.NameHeader, a.Name}, {authn.RoleHeader, string(a.Role)}} {
			ok.Headers = append(ok.Headers, &corev3.HeaderValueOption{
				Header:       &corev3.HeaderValue{Key: kv[0], Value: kv[1]},
				AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
			})
		}
	}
	return &authv3.CheckResponse{
		Status:       &rpcstatus.Status{Code: int32(codes.OK)},
		HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: ok},
	}
}

// deny answers 401 with gRPC status headers, so gRPC clients behind the gateway see
// Unauthenticated with upstream's message, as they would from the service itself.
func deny(msg string) *authv3.CheckResponse {
	return refuse(codes.Unauthenticated, typev3.StatusCode_Unauthorized, msg)
}

// forbid answers 403 PermissionDenied: the token is live but its role may not call the path.
func forbid(msg string) *authv3.CheckResponse {
	return refuse(codes.PermissionDenied, typev3.StatusCode_Forbidden, msg)
}

func refuse(code codes.Code, httpStatus typev3.StatusCode, msg string) *authv3.CheckResponse {
	h := func(k, v string) *corev3.HeaderValueOption {
		return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, Value: v}}
	}
	return &authv3.CheckResponse{
		Status: &rpcstatus.Status{Code: int32(code), Message: msg},
		HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{
			Status: &typev3.HttpStatus{Code: httpStatus},
			Headers: []*corev3.HeaderValueOption{
				h("grpc-status", strconv.Itoa(int(code))),
				h("grpc-message", msg),
				h("content-type", "application/grpc"),
			},
			Body: msg,
		}},
	}
}
