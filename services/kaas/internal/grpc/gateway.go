package grpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// maxBody bounds a REST request body (the largest valid request is a few kilobytes).
const maxBody = 1 << 20

// route is one of upstream's REST paths: the HTTP method and path of an RPC's google.api.http
// option in api.proto, the RPC it calls (its full gRPC method name and message types), and
// whether the request comes as the body ("*") or as query parameters.
type route struct {
	method, path, rpc string
	body              bool
	req, resp         protoreflect.MessageType
}

// routes reads svc's REST table from its methods' google.api.http options, in the order of
// the service block, so api.proto is the one place a route is declared. It refuses what the
// gateway cannot serve as upstream's grpc-gateway v1 did: a method without the option, a
// streaming method, a body naming one field, additional bindings, path variables.
func routes(svc protoreflect.ServiceDescriptor) ([]route, error) {
	methods := svc.Methods()
	out := make([]route, 0, methods.Len())
	for i := range methods.Len() {
		m := methods.Get(i)
		rt, err := httpRoute(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.FullName(), err)
		}
		out = append(out, rt)
	}
	return out, nil
}

// httpRoute is the route m's google.api.http option declares.
func httpRoute(m protoreflect.MethodDescriptor) (route, error) {
	if !proto.HasExtension(m.Options(), annotations.E_Http) {
		return route{}, errors.New("no google.api.http option: every RPC of the service needs its REST route")
	}
	if m.IsStreamingClient() || m.IsStreamingServer() {
		return route{}, errors.New("streaming RPCs have no REST route here")
	}
	rule := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
	if len(rule.GetAdditionalBindings()) > 0 || (rule.GetBody() != "" && rule.GetBody() != "*") {
		return route{}, fmt.Errorf("google.api.http %v: the gateway serves one binding with body \"*\" or none", rule)
	}
	rt := route{rpc: "/" + string(m.Parent().FullName()) + "/" + string(m.Name()), body: rule.GetBody() == "*"}
	switch p := rule.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		rt.method, rt.path = http.MethodGet, p.Get
	case *annotations.HttpRule_Post:
		rt.method, rt.path = http.MethodPost, p.Post
	case *annotations.HttpRule_Put:
		rt.method, rt.path = http.MethodPut, p.Put
	case *annotations.HttpRule_Delete:
		rt.method, rt.path = http.MethodDelete, p.Delete
	case *annotations.HttpRule_Patch:
		rt.method, rt.path = http.MethodPatch, p.Patch
	default:
		return route{}, fmt.Errorf("google.api.http %v: no get, post, put, delete or patch path", rule)
	}
	if !strings.HasPrefix(rt.path, "/") || strings.ContainsAny(rt.path, "{}*:") {
		return route{}, fmt.Errorf("google.api.http path %q: the gateway serves literal paths only", rt.path)
	}
	var err error
	if rt.req, err = protoregistry.GlobalTypes.FindMessageByName(m.Input().FullName()); err != nil {
		return route{}, err
	}
	if rt.resp, err = protoregistry.GlobalTypes.FindMessageByName(m.Output().FullName()); err != nil {
		return route{}, err
	}
	return rt, nil
}

// Gateway serves the REST paths by calling the gRPC service through conn, so every REST call
// passes the same interceptors (token check, logging, metrics) as a gRPC call. It does what
// grpc-gateway's generated handlers do, with grpc-gateway's own runtime: the Authorization
// header becomes the call's authorization metadata, the body or query parameters become the
// request, the response and gRPC errors are written as upstream's gateway (v1) wrote them.
type Gateway struct {
	mux  *runtime.ServeMux
	conn grpc.ClientConnInterface
}

// NewGateway serves the REST paths of kaas's Cluster service over conn (a connection to this
// service's gRPC server).
func NewGateway(conn grpc.ClientConnInterface, log *slog.Logger) (*Gateway, error) {
	table, err := routes(kaaspb.File_cnct_kaas_api_api_proto.Services().ByName("Cluster"))
	if err != nil {
		return nil, fmt.Errorf("kaas REST routes: %w", err)
	}
	g := &Gateway{conn: conn}
	g.mux = runtime.NewServeMux(
		// Upstream's gateway was grpc-gateway v1.8.5 with its default marshaler,
		// JSONPb{OrigName: true}: proto field names, enums by name, no zero values out;
		// either name of a field and unknown fields (ignored) in.
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.JSONPb{
			MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true},
			UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: true},
		}),
		runtime.WithErrorHandler(v1Errors(log)),
		runtime.WithRoutingErrorHandler(routingErrors),
	)
	for _, rt := range table {
		if err := g.mux.HandlePath(rt.method, rt.path, g.serve(rt)); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// ServeHTTP serves the REST paths.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.mux.ServeHTTP(w, r) }

// serve is the handler of one route: it decodes the request, calls the RPC and writes its
// answer, as grpc-gateway's generated handler of a unary method does.
func (g *Gateway) serve(rt route) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		inbound, outbound := runtime.MarshalerForRequest(g.mux, r)
		ctx, err := runtime.AnnotateContext(r.Context(), g.mux, r, rt.rpc, runtime.WithHTTPPathPattern(rt.path))
		if err != nil {
			runtime.HTTPError(r.Context(), g.mux, outbound, w, r, status.Error(codes.InvalidArgument, input.Truncate(err.Error(), 200)))
			return
		}
		req, resp := rt.req.New().Interface(), rt.resp.New().Interface()
		if err := decode(w, r, inbound, req, rt.body); err != nil {
			runtime.HTTPError(ctx, g.mux, outbound, w, r, err)
			return
		}
		var md runtime.ServerMetadata
		err = g.conn.Invoke(ctx, rt.rpc, req, resp, grpc.Header(&md.HeaderMD), grpc.Trailer(&md.TrailerMD))
		ctx = runtime.NewServerMetadataContext(ctx, md)
		if err != nil {
			runtime.HTTPError(ctx, g.mux, outbound, w, r, err)
			return
		}
		runtime.ForwardResponseMessage(ctx, g.mux, outbound, w, r, resp)
	}
}

// decode fills req from the body (body routes) or the query string (the others), as the
// handlers grpc-gateway v1.8.5 generated for upstream did: unknown JSON fields ignored (v1's
// jsonpb.Unmarshaler{AllowUnknownFields: true}); a body route reads no query parameters; a
// query route reads only the URL's query (never a body), where malformed pairs are dropped
// (url.URL.Query), unknown names are ignored, each field answers to its proto name and its
// lowerCamel JSON name, and a singular field given twice takes the first value.
func decode(w http.ResponseWriter, r *http.Request, m runtime.Marshaler, req proto.Message, body bool) error {
	if body {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		if err := m.NewDecoder(r.Body).Decode(req); err != nil && !errors.Is(err, io.EOF) {
			return status.Error(codes.InvalidArgument, "request body: "+input.Truncate(err.Error(), 200))
		}
		return nil
	}
	q := r.URL.Query()
	firstOfSingular(req.ProtoReflect().Descriptor(), q)
	if err := runtime.PopulateQueryParameters(req, q, utilities.NewDoubleArray(nil)); err != nil {
		return status.Error(codes.InvalidArgument, "query: "+input.Truncate(err.Error(), 200))
	}
	return nil
}

// firstOfSingular keeps only the first value of each query parameter that names a singular
// field (grpc-gateway v1 used values[0]; v2 refuses "too many values").
func firstOfSingular(d protoreflect.MessageDescriptor, q url.Values) {
	for key, vs := range q {
		if len(vs) < 2 {
			continue
		}
		md := d
		var f protoreflect.FieldDescriptor
		for _, part := range strings.Split(key, ".") {
			if md == nil {
				f = nil
				break
			}
			if f = md.Fields().ByName(protoreflect.Name(part)); f == nil {
				f = md.Fields().ByJSONName(part)
			}
			if f == nil || f.IsList() || f.IsMap() {
				break
			}
			md = f.Message()
		}
		if f != nil && !f.IsList() && !f.IsMap() && f.Message() == nil {
			q[key] = vs[:1]
		}
	}
}

// routingErrors answers a path that does not exist (404), a method a path does not take
// (405, where grpc-gateway v2 would say 501) and an unparsable request line (400) as
// grpc-gateway v1's mux did without a proto error handler (upstream's setup): http.Error's
// plain-text status line, not a JSON body.
func routingErrors(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, _ *http.Request, httpStatus int) {
	http.Error(w, http.StatusText(httpStatus), httpStatus)
}

// errorBody is grpc-gateway v1's error body, with its members in v1's order; details, like
// every empty field under v1's JSONPb (EmitDefaults off), is left out when there are none.
type errorBody struct {
	Error   string            `json:"error"`
	Message string            `json:"message"`
	Code    int32             `json:"code"`
	Details []json.RawMessage `json:"details,omitempty"`
}

// v1Errors writes errors as grpc-gateway v1 did — {"error", "message", "code"[, "details"]},
// error and message both the status message — with the HTTP status of v1's table
// (v1HTTPStatus). The mux's own errors (a form it cannot parse on the POST fallback) are
// plain text, as v1's OtherErrorHandler wrote them.
func v1Errors(log *slog.Logger) runtime.ErrorHandlerFunc {
	return func(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, _ *http.Request, err error) {
		var he *runtime.HTTPStatusError
		if errors.As(err, &he) {
			http.Error(w, status.Convert(he.Err).Message(), he.HTTPStatus)
			return
		}
		st := status.Convert(err)
		body := errorBody{Error: st.Message(), Message: st.Message(), Code: int32(st.Code())}
		for _, d := range st.Proto().GetDetails() {
			if b, err := protojson.Marshal(d); err == nil {
				body.Details = append(body.Details, b)
			}
		}
		w.Header().Del("Trailer")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(v1HTTPStatus(st.Code()))
		if err := json.NewEncoder(w).Encode(body); err != nil {
			log.DebugContext(ctx, "writing a REST error failed", "error", err)
		}
	}
}

// v1HTTPStatus is the HTTP status grpc-gateway v1.8.5 (upstream's go.mod and vendor/) gave
// each gRPC code. It differs from v2's runtime.HTTPStatusFromCode in two places:
// FailedPrecondition is 412 (v2 and the last v1, 1.16, say 400) and Canceled is 408 (v2: 499).
func v1HTTPStatus(c codes.Code) int {
	switch c {
	case codes.FailedPrecondition:
		return http.StatusPreconditionFailed
	case codes.Canceled:
		return http.StatusRequestTimeout
	}
	return runtime.HTTPStatusFromCode(c)
}
