package grpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// maxBody bounds a REST request body (the largest valid request is a few kilobytes).
const maxBody = 1 << 20

// route is one of upstream's REST paths (the google.api.http options of its api.proto, kept
// in our contract as each RPC's comment): the HTTP method and path, the RPC it calls, and
// whether the request comes as the body ("*") or as query parameters.
type route struct {
	method, path, rpc string
	body              bool
	serve             func(g *Gateway) runtime.HandlerFunc
}

// Routes is upstream's REST table, in the order of its service block.
func routes() []route {
	const svc = "/cnct.kaas.api.Cluster/"
	return []route{
		unary("POST", "/api/v1/cluster", svc+"CreateCluster", true, kaaspb.ClusterClient.CreateCluster),
		unary("GET", "/api/v1/cluster", svc+"GetCluster", false, kaaspb.ClusterClient.GetCluster),
		unary("DELETE", "/api/v1/cluster", svc+"DeleteCluster", false, kaaspb.ClusterClient.DeleteCluster),
		unary("GET", "/api/v1/cluster/list", svc+"GetClusterList", false, kaaspb.ClusterClient.GetClusterList),
		unary("GET", "/api/v1/cluster/nodesstatus", svc+"GetClusterNodesStatus", false, kaaspb.ClusterClient.GetClusterNodesStatus),
		unary("GET", "/api/v1/version", svc+"GetVersionInformation", false, kaaspb.ClusterClient.GetVersionInformation),
		unary("POST", "/api/v1/cluster/pool", svc+"AddNodePool", true, kaaspb.ClusterClient.AddNodePool),
		unary("DELETE", "/api/v1/cluster/pool", svc+"DeleteNodePool", false, kaaspb.ClusterClient.DeleteNodePool),
		unary("PUT", "/api/v1/cluster/pool", svc+"ScaleNodePool", true, kaaspb.ClusterClient.ScaleNodePool),
		unary("GET", "/api/v1/cluster/upgrade", svc+"GetUpgradeClusterInformation", false, kaaspb.ClusterClient.GetUpgradeClusterInformation),
		unary("PUT", "/api/v1/cluster/upgrade", svc+"UpgradeCluster", true, kaaspb.ClusterClient.UpgradeCluster),
	}
}

// Gateway serves the REST paths by calling the gRPC service through conn, so every REST call
// passes the same interceptors (token check, logging, metrics) as a gRPC call. It does what
// grpc-gateway's generated handlers do, with grpc-gateway's own runtime: the Authorization
// header becomes the call's authorization metadata, the body or query parameters become the
// request, the response and gRPC errors are written as upstream's gateway (v1) wrote them.
type Gateway struct {
	mux    *runtime.ServeMux
	client kaaspb.ClusterClient
}

// NewGateway serves the REST paths over conn (a connection to this service's gRPC server).
func NewGateway(conn grpc.ClientConnInterface, log *slog.Logger) (*Gateway, error) {
	g := &Gateway{client: kaaspb.NewClusterClient(conn)}
	g.mux = runtime.NewServeMux(
		// Upstream's gateway was grpc-gateway v1: proto field names, enums by name, no
		// zero values, unknown fields refused.
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.JSONPb{
			MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true},
			UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
		}),
		runtime.WithErrorHandler(v1Errors(log)),
		runtime.WithRoutingErrorHandler(routingErrors),
	)
	for _, rt := range routes() {
		if err := g.mux.HandlePath(rt.method, rt.path, rt.serve(g)); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// ServeHTTP serves the REST paths.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.mux.ServeHTTP(w, r) }

// unary builds the route of one unary RPC; call is the generated client's method.
func unary[Req any, PReq interface {
	*Req
	proto.Message
}, Resp proto.Message](method, path, rpc string, body bool, call func(kaaspb.ClusterClient, context.Context, PReq, ...grpc.CallOption) (Resp, error)) route {
	rt := route{method: method, path: path, rpc: rpc, body: body}
	rt.serve = func(g *Gateway) runtime.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
			inbound, outbound := runtime.MarshalerForRequest(g.mux, r)
			ctx, err := runtime.AnnotateContext(r.Context(), g.mux, r, rpc, runtime.WithHTTPPathPattern(path))
			if err != nil {
				runtime.HTTPError(r.Context(), g.mux, outbound, w, r, status.Error(codes.InvalidArgument, input.Truncate(err.Error(), 200)))
				return
			}
			req := PReq(new(Req))
			if err := decode(w, r, inbound, req, body); err != nil {
				runtime.HTTPError(ctx, g.mux, outbound, w, r, err)
				return
			}
			var md runtime.ServerMetadata
			resp, err := call(g.client, ctx, req, grpc.Header(&md.HeaderMD), grpc.Trailer(&md.TrailerMD))
			ctx = runtime.NewServerMetadataContext(ctx, md)
			if err != nil {
				runtime.HTTPError(ctx, g.mux, outbound, w, r, err)
				return
			}
			runtime.ForwardResponseMessage(ctx, g.mux, outbound, w, r, resp)
		}
	}
	return rt
}

// decode fills req from the body (body routes) or the query string (the others).
func decode(w http.ResponseWriter, r *http.Request, m runtime.Marshaler, req proto.Message, body bool) error {
	if body {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		if err := m.NewDecoder(r.Body).Decode(req); err != nil && !errors.Is(err, io.EOF) {
			return status.Error(codes.InvalidArgument, "request body: "+input.Truncate(err.Error(), 200))
		}
		return nil
	}
	if err := r.ParseForm(); err != nil {
		return status.Error(codes.InvalidArgument, "query: "+input.Truncate(err.Error(), 200))
	}
	if err := runtime.PopulateQueryParameters(req, r.Form, utilities.NewDoubleArray(nil)); err != nil {
		return status.Error(codes.InvalidArgument, "query: "+input.Truncate(err.Error(), 200))
	}
	return nil
}

// routingErrors answers a path that does not exist (404) or a method a path does not take
// (405, not grpc-gateway's default 501), in the error body below.
func routingErrors(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	code := codes.NotFound
	switch httpStatus {
	case http.StatusMethodNotAllowed:
		code = codes.Unimplemented
	case http.StatusBadRequest:
		code = codes.InvalidArgument
	}
	err := &runtime.HTTPStatusError{HTTPStatus: httpStatus, Err: status.Error(code, http.StatusText(httpStatus))}
	runtime.HTTPError(ctx, mux, m, w, r, err)
}

// v1Errors writes errors as grpc-gateway v1 did — {"error", "code", "message", "details"} —
// which v2 clients read too (code, message, details), with the HTTP status of the gRPC code.
func v1Errors(log *slog.Logger) runtime.ErrorHandlerFunc {
	return func(ctx context.Context, mux *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
		st := status.Convert(err)
		var httpStatus int
		var he *runtime.HTTPStatusError
		if errors.As(err, &he) {
			httpStatus = he.HTTPStatus
			st = status.Convert(he.Err)
		} else {
			httpStatus = runtime.HTTPStatusFromCode(st.Code())
		}
		details := st.Proto().GetDetails()
		var rendered []json.RawMessage
		for _, d := range details {
			if b, err := protojson.Marshal(d); err == nil {
				rendered = append(rendered, b)
			}
		}
		body := map[string]any{"error": st.Message(), "code": int32(st.Code()), "message": st.Message(), "details": rendered}
		if rendered == nil {
			body["details"] = []any{}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(httpStatus)
		if err := json.NewEncoder(w).Encode(body); err != nil {
			log.DebugContext(ctx, "writing a REST error failed", "error", err)
		}
	}
}
