package grpc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
)

// restRoute is one route of upstream's api.proto (its google.api.http option) with the
// request forms CNCT's clients could send it, the reply the backend gives, and what a script
// reads from the answer (jq paths → values).
type restRoute struct {
	rpc, method, path string
	body              bool
	forms             []restForm
	reply             proto.Message
	reads             map[string]any
}

// restForm is one way of sending a request (query string or body) and the request the
// gRPC service must receive for it.
type restForm struct {
	query, body string
	want        proto.Message
}

// upstreamRoutes is every route upstream's api.proto mapped (cma-ssh/ims-kaas api/api.proto,
// service Cluster, in its order), with the forms grpc-gateway v1.8.5's generated handlers
// accepted: query routes read the URL's query with either name of a field, ignore unknown
// parameters (CNCT's scripts send provider=ssh) and malformed pairs, and take the first value
// of a singular field; body ("*") routes read the whole body with either name of a field,
// ignore unknown fields and never read the query.
func upstreamRoutes() []restRoute {
	create := &kaaspb.CreateClusterMsg{Name: "c1", K8SVersion: "v1.33.13",
		ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 3, InstanceType: "standard", Labels: []*kaaspb.KubernetesLabel{{Name: "a", Value: "b"}}},
		WorkerNodePools:   []*kaaspb.MachineSpec{{Name: "w", Count: 2, InstanceType: "gpu"}}}
	pools := &kaaspb.AddNodePoolMsg{ClusterName: "c1", WorkerNodePools: []*kaaspb.MachineSpec{{Name: "p", Count: 1, Labels: []*kaaspb.KubernetesLabel{{Name: "x", Value: "y"}}}}}
	scale := &kaaspb.ScaleNodePoolMsg{ClusterName: "c1", NodePools: []*kaaspb.ScaleNodePoolSpec{{Name: "w", Count: 3}}}
	upgrade := &kaaspb.UpgradeClusterMsg{Name: "c1", Version: "v1.33.13"}
	named := func(q string) restForm { return restForm{query: q, want: &kaaspb.GetClusterMsg{Name: "c1"}} }
	return []restRoute{
		{rpc: "CreateCluster", method: "POST", path: "/api/v1/cluster", body: true, forms: []restForm{
			{body: `{"name":"c1","k8s_version":"v1.33.13","control_plane_nodes":{"labels":[{"name":"a","value":"b"}],"instanceType":"standard","count":3},
				"worker_node_pools":[{"name":"w","count":2,"instanceType":"gpu"}]}`, want: create},
			{body: `{"name":"c1","k8sVersion":"v1.33.13","controlPlaneNodes":{"labels":[{"name":"a","value":"b"}],"instanceType":"standard","count":3},
				"workerNodePools":[{"name":"w","count":2,"instanceType":"gpu"}]}`, want: create},
			{query: "?name=other&provider=ssh", body: `{"name":"c1","provider":"ssh","k8sVersion":"v1.33.13","sshKey":{"x":[1]},
				"controlPlaneNodes":{"labels":[{"name":"a","value":"b","color":1}],"instanceType":"standard","count":3},
				"workerNodePools":[{"name":"w","count":"2","instanceType":"gpu","zone":null}]}`, want: create},
			{body: ``, want: &kaaspb.CreateClusterMsg{}},
		}, reply: &kaaspb.CreateClusterReply{Ok: true, Cluster: &kaaspb.ClusterItem{Name: "c1", Status: kaaspb.ClusterStatus_PROVISIONING, StatusMessage: "0 of 5 machines ready"}},
			reads: map[string]any{".ok": true, ".cluster.name": "c1", ".cluster.status": "PROVISIONING", ".cluster.status_message": "0 of 5 machines ready"}},
		{rpc: "GetCluster", method: "GET", path: "/api/v1/cluster", forms: []restForm{
			named("?name=c1"), named("?name=c1&provider=ssh"), named("?provider=ssh&name=c1&name=c2"), named("?name=c1&%zz=1&a=%"),
			{query: "", want: &kaaspb.GetClusterMsg{}},
		}, reply: &kaaspb.GetClusterReply{Ok: true, Cluster: &kaaspb.ClusterDetailItem{Name: "c1", Status: kaaspb.ClusterStatus_STOPPING,
			StatusMessage: "deleting: releasing 3 machine(s)", Kubeconfig: "apiVersion: v1\nkind: Config\n"}},
			reads: map[string]any{".ok": true, ".cluster.status": "STOPPING", ".cluster.kubeconfig": "apiVersion: v1\nkind: Config\n",
				".cluster.status_message": "deleting: releasing 3 machine(s)", ".cluster.statusMessage": nil}},
		{rpc: "DeleteCluster", method: "DELETE", path: "/api/v1/cluster", forms: []restForm{
			{query: "?name=c1", want: &kaaspb.DeleteClusterMsg{Name: "c1"}},
			{query: "?name=c1&provider=ssh", want: &kaaspb.DeleteClusterMsg{Name: "c1"}},
		}, reply: &kaaspb.DeleteClusterReply{Ok: true, Status: "deleting"}, reads: map[string]any{".ok": true, ".status": "deleting"}},
		{rpc: "GetClusterList", method: "GET", path: "/api/v1/cluster/list", forms: []restForm{
			{query: "", want: &kaaspb.GetClusterListMsg{}}, {query: "?provider=ssh", want: &kaaspb.GetClusterListMsg{}},
		}, reply: &kaaspb.GetClusterListReply{Ok: true, Clusters: []*kaaspb.ClusterItem{{Name: "a", Status: kaaspb.ClusterStatus_RUNNING}, {Name: "b", Status: kaaspb.ClusterStatus_STOPPING}}},
			reads: map[string]any{".clusters[0].name": "a", ".clusters[0].status": "RUNNING", ".clusters[1].status": "STOPPING", ".clusters[1].status_message": nil}},
		{rpc: "GetClusterNodesStatus", method: "GET", path: "/api/v1/cluster/nodesstatus", forms: []restForm{
			{query: "?clusterName=c1", want: &kaaspb.GetClusterNodesStatusMsg{ClusterName: "c1"}},
			{query: "?clusterName=c1&clusterName=c2&provider=ssh", want: &kaaspb.GetClusterNodesStatusMsg{ClusterName: "c1"}},
		}, reply: &kaaspb.GetClusterNodesStatusReply{Name: "c1", Count: 1, Machines: []*kaaspb.GetClusterNodesStatusReply_MachineStatus{{
			K8SNodeStatus: "Ready", K8SVersion: "v1.33.13", MaasSystemId: "abc", MaasHostname: "h", MaasNodeStatus: "Deployed", MaasIPAddr: "10.0.0.2"}}},
			reads: map[string]any{".Name": "c1", ".count": float64(1), ".machines[0].k8sNodeStatus": "Ready", ".machines[0].k8sVersion": "v1.33.13",
				".machines[0].maasSystemId": "abc", ".machines[0].maasHostname": "h", ".machines[0].maasNodeStatus": "Deployed", ".machines[0].maasIPAddr": "10.0.0.2"}},
		{rpc: "GetVersionInformation", method: "GET", path: "/api/v1/version", forms: []restForm{
			{query: "", want: &kaaspb.GetVersionMsg{}}, {query: "?verbose=1", want: &kaaspb.GetVersionMsg{}},
		}, reply: &kaaspb.GetVersionReply{Ok: true, VersionInformation: &kaaspb.GetVersionReply_VersionInformation{GitVersion: "v1", GoVersion: "go1.25"}},
			reads: map[string]any{".ok": true, ".version_information.git_version": "v1", ".version_information.go_version": "go1.25"}},
		{rpc: "AddNodePool", method: "POST", path: "/api/v1/cluster/pool", body: true, forms: []restForm{
			{body: `{"clusterName":"c1","worker_node_pools":[{"name":"p","count":1,"labels":[{"name":"x","value":"y"}]}]}`, want: pools},
			{body: `{"clusterName":"c1","workerNodePools":[{"name":"p","count":1,"labels":[{"name":"x","value":"y"}]}],"provider":"ssh"}`, want: pools},
		}, reply: &kaaspb.AddNodePoolReply{Ok: true}, reads: map[string]any{".ok": true}},
		{rpc: "DeleteNodePool", method: "DELETE", path: "/api/v1/cluster/pool", forms: []restForm{
			{query: "?clusterName=c1&node_pool_names=a&node_pool_names=b", want: &kaaspb.DeleteNodePoolMsg{ClusterName: "c1", NodePoolNames: []string{"a", "b"}}},
			{query: "?clusterName=c1&nodePoolNames=a&nodePoolNames=b&provider=ssh", want: &kaaspb.DeleteNodePoolMsg{ClusterName: "c1", NodePoolNames: []string{"a", "b"}}},
		}, reply: &kaaspb.DeleteNodePoolReply{Ok: true}, reads: map[string]any{".ok": true}},
		{rpc: "ScaleNodePool", method: "PUT", path: "/api/v1/cluster/pool", body: true, forms: []restForm{
			{body: `{"clusterName":"c1","node_pools":[{"name":"w","count":3}]}`, want: scale},
			{body: `{"clusterName":"c1","nodePools":[{"name":"w","count":3,"instanceType":"gpu"}]}`, want: scale},
		}, reply: &kaaspb.ScaleNodePoolReply{Ok: true}, reads: map[string]any{".ok": true}},
		{rpc: "GetUpgradeClusterInformation", method: "GET", path: "/api/v1/cluster/upgrade", forms: []restForm{
			{query: "?name=c1", want: &kaaspb.GetUpgradeClusterInformationMsg{Name: "c1"}},
			{query: "?name=c1&provider=ssh", want: &kaaspb.GetUpgradeClusterInformationMsg{Name: "c1"}},
		}, reply: &kaaspb.GetUpgradeClusterInformationReply{Ok: true, Versions: []string{"v1.33.13"}}, reads: map[string]any{".ok": true, ".versions[0]": "v1.33.13"}},
		{rpc: "UpgradeCluster", method: "PUT", path: "/api/v1/cluster/upgrade", body: true, forms: []restForm{
			{body: `{"name":"c1","version":"v1.33.13"}`, want: upgrade},
			{query: "?name=c9", body: `{"name":"c1","version":"v1.33.13","force":true}`, want: upgrade},
		}, reply: &kaaspb.UpgradeClusterReply{Ok: true}, reads: map[string]any{".ok": true}},
	}
}

// TestRoutesAreUpstreams pins the REST table the gateway reads from api.proto's
// google.api.http options to upstream's (the test's own table, from the wire contract), and
// every route to an RPC the generated server serves: a route without its RPC, an RPC
// without its route, or a changed path, verb or body fails here.
func TestRoutesAreUpstreams(t *testing.T) {
	table, err := routes(kaaspb.File_cnct_kaas_api_api_proto.Services().ByName("Cluster"))
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, m := range kaaspb.Cluster_ServiceDesc.Methods {
		served["/"+kaaspb.Cluster_ServiceDesc.ServiceName+"/"+m.MethodName] = true
	}
	gateway, want := map[string]string{}, map[string]string{}
	for _, r := range table {
		if !served[r.rpc] {
			t.Errorf("route %s %s names %s, which the Cluster server does not serve", r.method, r.path, r.rpc)
		}
		if r.req.Descriptor().FullName() == "" || r.resp.Descriptor().FullName() == "" {
			t.Errorf("%s: no message types", r.rpc)
		}
		gateway[r.rpc] = route4(r.method, r.path, r.body)
	}
	for _, r := range upstreamRoutes() {
		want["/cnct.kaas.api.Cluster/"+r.rpc] = route4(r.method, r.path, r.body)
	}
	for rpc, w := range want {
		if gateway[rpc] != w {
			t.Errorf("%s: gateway %q, upstream %q", rpc, gateway[rpc], w)
		}
	}
	if len(table) != len(want) || len(served) != len(want) {
		t.Errorf("gateway has %d routes, upstream %d, the server %d RPCs", len(table), len(want), len(served))
	}
}

// TestRoutesRefuseWhatTheGatewayCannotServe: a method without a google.api.http option, or
// with one the gateway would serve wrongly, stops the gateway at start.
func TestRoutesRefuseWhatTheGatewayCannotServe(t *testing.T) {
	get := &annotations.HttpRule{Pattern: &annotations.HttpRule_Get{Get: "/api/v1/version"}}
	for _, tc := range []struct {
		name   string
		rule   *annotations.HttpRule
		stream bool
		says   string
	}{
		{"ok", get, false, ""},
		{"no option", nil, false, "no google.api.http option"},
		{"streaming", get, true, "streaming"},
		{"body field", &annotations.HttpRule{Pattern: &annotations.HttpRule_Post{Post: "/x"}, Body: "name"}, false, "body"},
		{"additional binding", &annotations.HttpRule{Pattern: get.Pattern, AdditionalBindings: []*annotations.HttpRule{get}}, false, "one binding"},
		{"path variable", &annotations.HttpRule{Pattern: &annotations.HttpRule_Get{Get: "/api/v1/cluster/{name}"}}, false, "literal paths"},
		{"custom verb", &annotations.HttpRule{Pattern: &annotations.HttpRule_Custom{Custom: &annotations.CustomHttpPattern{Kind: "HEAD", Path: "/x"}}}, false, "no get, post"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := routes(oneMethodService(t, tc.rule, tc.stream))
			if tc.says == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)) {
				t.Fatalf("error %v; want one saying %q", err, tc.says)
			}
		})
	}
}

// oneMethodService is a service Probe with one method, Version (kaas's GetVersionMsg →
// GetVersionReply), carrying rule as its google.api.http option when rule is not nil.
func oneMethodService(t *testing.T, rule *annotations.HttpRule, stream bool) protoreflect.ServiceDescriptor {
	t.Helper()
	opts := &descriptorpb.MethodOptions{}
	if rule != nil {
		proto.SetExtension(opts, annotations.E_Http, rule)
	}
	fd := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("probe/probe.proto"),
		Package:    proto.String("probe"),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"cnct/kaas/api/api.proto"},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("Probe"),
			Method: []*descriptorpb.MethodDescriptorProto{{
				Name:            proto.String("Version"),
				InputType:       proto.String(".cnct.kaas.api.GetVersionMsg"),
				OutputType:      proto.String(".cnct.kaas.api.GetVersionReply"),
				Options:         opts,
				ServerStreaming: proto.Bool(stream),
			}},
		}},
	}
	f, err := protodesc.NewFile(fd, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	return f.Services().Get(0)
}

func route4(method, path string, body bool) string {
	if body {
		return method + " " + path + " *"
	}
	return method + " " + path
}

// backend is the gRPC side of the gateway in these tests: a real gRPC server whose
// interceptor records each call (method, request, authorization) and answers with the
// route's reply or the error it is told to give.
type backend struct {
	mu      sync.Mutex
	method  string
	req     proto.Message
	auth    []string
	replies map[string]proto.Message
	fail    error
}

func (b *backend) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, _ grpc.UnaryHandler) (any, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	md, _ := metadata.FromIncomingContext(ctx)
	b.method, b.req, b.auth = info.FullMethod, proto.Clone(req.(proto.Message)), md.Get("authorization")
	if b.fail != nil {
		return nil, b.fail
	}
	return b.replies[info.FullMethod], nil
}

func (b *backend) last() (string, proto.Message, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, r, a := b.method, b.req, b.auth
	b.method, b.req, b.auth = "", nil, nil
	return m, r, a
}

func (b *backend) failWith(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fail = err
}

// newGatewayOver serves the gateway over a real gRPC connection to b.
func newGatewayOver(t *testing.T, b *backend) *Gateway {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(b.intercept))
	kaaspb.RegisterClusterServer(srv, kaaspb.UnimplementedClusterServer{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	g, err := NewGateway(conn, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func serve(g *Gateway, method, target, body string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] != "" {
			r.Header.Set(header[i], header[i+1])
		}
	}
	w := httptest.NewRecorder()
	g.ServeHTTP(w, r)
	return w
}

// v1Statuses is grpc-gateway v1.8.5's HTTPStatusFromCode (upstream's vendored runtime).
var v1Statuses = map[codes.Code]int{
	codes.Canceled: 408, codes.Unknown: 500, codes.InvalidArgument: 400, codes.DeadlineExceeded: 504,
	codes.NotFound: 404, codes.AlreadyExists: 409, codes.PermissionDenied: 403, codes.ResourceExhausted: 429,
	codes.FailedPrecondition: 412, codes.Aborted: 409, codes.OutOfRange: 400, codes.Unimplemented: 501,
	codes.Internal: 500, codes.Unavailable: 503, codes.DataLoss: 500, codes.Unauthenticated: 401,
}

// TestRESTAnswersAsGRPCGatewayV1 calls every route of upstream's api.proto in every request
// form, then makes the backend fail with every gRPC code, and checks the request the service
// got, the Authorization header passed on as metadata, the status, and the JSON as scripts
// read it (jq paths) or as v1 wrote errors.
func TestRESTAnswersAsGRPCGatewayV1(t *testing.T) {
	b := &backend{replies: map[string]proto.Message{}}
	for _, r := range upstreamRoutes() {
		b.replies["/cnct.kaas.api.Cluster/"+r.rpc] = r.reply
	}
	g := newGatewayOver(t, b)
	for _, r := range upstreamRoutes() {
		t.Run(r.rpc, func(t *testing.T) {
			b.failWith(nil)
			for _, f := range r.forms {
				w := serve(g, r.method, r.path+f.query, f.body, "Authorization", "Bearer tok-1", "Content-Type", "application/json")
				what := fmt.Sprintf("%s %s%s %s", r.method, r.path, f.query, f.body)
				method, got, auth := b.last()
				if w.Code != 200 || method != "/cnct.kaas.api.Cluster/"+r.rpc || !proto.Equal(got, f.want) {
					t.Fatalf("%s: %d %s; the service got %s %v, want %v", what, w.Code, w.Body, method, got, f.want)
				}
				if len(auth) != 1 || auth[0] != "Bearer tok-1" {
					t.Errorf("%s: authorization metadata %q", what, auth)
				}
				if ct := w.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("%s: Content-Type %q", what, ct)
				}
				var v any
				if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
					t.Fatalf("%s: %q is not JSON", what, w.Body)
				}
				for path, want := range r.reads {
					if got := jq(v, path); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("%s: %s is %v, want %v (%s)", what, path, got, want, w.Body)
					}
				}
			}
			for code, httpStatus := range v1Statuses {
				msg := "cluster c1: " + code.String()
				b.failWith(status.Error(code, msg))
				w := serve(g, r.method, r.path+r.forms[0].query, r.forms[0].body)
				want := fmt.Sprintf(`{"error":%q,"message":%q,"code":%d}`, msg, msg, code)
				if w.Code != httpStatus || strings.TrimSpace(w.Body.String()) != want || w.Header().Get("Content-Type") != "application/json" {
					t.Errorf("%s: %d %s %q; want %d %s", code, w.Code, w.Header().Get("Content-Type"), w.Body, httpStatus, want)
				}
			}
			st, _ := status.New(codes.InvalidArgument, "name: bad").WithDetails(&errdetails.ErrorInfo{Reason: "BAD_NAME"})
			b.failWith(st.Err())
			w := serve(g, r.method, r.path+r.forms[0].query, r.forms[0].body)
			want := `{"error":"name: bad","message":"name: bad","code":3,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"BAD_NAME"}]}`
			if w.Code != 400 || compactJSON(t, w.Body.String()) != want {
				t.Errorf("with details: %d %s; want %s", w.Code, w.Body, want)
			}
		})
	}
}

// TestRESTRefusesAsGRPCGatewayV1: requests the gateway itself refuses, before the service,
// answer as v1 did — bad JSON and bad query values 400 in the error body; a path that is not
// a route 404 and a method the path does not take 405, both in http.Error's plain text; and
// v1's fallback of a form POST to the path's other method.
func TestRESTRefusesAsGRPCGatewayV1(t *testing.T) {
	b := &backend{replies: map[string]proto.Message{"/cnct.kaas.api.Cluster/GetClusterList": &kaaspb.GetClusterListReply{Ok: true}}}
	g := newGatewayOver(t, b)
	for _, tc := range []struct {
		method, target, body, contentType string
		status                            int
		says                              string
	}{
		{"POST", "/api/v1/cluster", `{"name":`, "application/json", 400, `"code":3`},
		{"PUT", "/api/v1/cluster/pool", `{"clusterName":"c1","nodePools":[{"count":"many"}]}`, "application/json", 400, `"code":3`},
		{"POST", "/api/v1/cluster", `{"name":"c1","k8s_version":7}`, "application/json", 400, `"error":"request body: `},
		{"GET", "/api/v1/cluster?name.first=c1", "", "", 400, `"code":3`},
		{"GET", "/api/v1/cluster/nope", "", "", 404, "Not Found\n"},
		{"GET", "/api/v2/cluster", "", "", 404, "Not Found\n"},
		{"PATCH", "/api/v1/cluster", "", "", 405, "Method Not Allowed\n"},
		{"POST", "/api/v1/version", "", "", 405, "Method Not Allowed\n"},
	} {
		w := serve(g, tc.method, tc.target, tc.body, "Content-Type", tc.contentType)
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.says) {
			t.Errorf("%s %s %s: %d %q; want %d with %q", tc.method, tc.target, tc.body, w.Code, w.Body, tc.status, tc.says)
		}
		if m, _, _ := b.last(); m != "" {
			t.Errorf("%s %s: reached the service (%s)", tc.method, tc.target, m)
		}
	}
	w := serve(g, "POST", "/api/v1/cluster/list", "", "Content-Type", "application/x-www-form-urlencoded")
	if m, _, _ := b.last(); w.Code != 200 || m != "/cnct.kaas.api.Cluster/GetClusterList" {
		t.Errorf("form POST fallback: %d %q, called %q", w.Code, w.Body, m)
	}
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q is not JSON", s)
	}
	// Re-encode in v1's member order (error, message, code, details).
	var b strings.Builder
	b.WriteString("{")
	for i, k := range []string{"error", "message", "code", "details"} {
		x, ok := v[k]
		if !ok {
			continue
		}
		out, _ := json.Marshal(x)
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:%s", k, out)
	}
	b.WriteString("}")
	return b.String()
}

// jq reads a path such as .cluster.status or .machines[0].maasIPAddr from decoded JSON, as
// jq does (nil where a member is absent).
func jq(v any, path string) any {
	for _, part := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		name, index, _ := strings.Cut(part, "[")
		if m, ok := v.(map[string]any); ok {
			v = m[name]
		} else {
			return nil
		}
		if index != "" {
			i, _ := strconv.Atoi(strings.TrimSuffix(index, "]"))
			l, ok := v.([]any)
			if !ok || i >= len(l) {
				return nil
			}
			v = l[i]
		}
	}
	return v
}
