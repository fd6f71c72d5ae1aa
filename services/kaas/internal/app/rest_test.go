package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas/maastest"
)

// rest calls upstream's REST API as CNCT's REST clients did (grpc-gateway v1 JSON: proto
// field names, enums by name).
func rest(t *testing.T, base, token, method, path, body string) (int, map[string]any) {
	t.Helper()
	if token != "" {
		token = "Bearer " + token
	}
	return restAuth(t, base, token, method, path, body)
}

// restAuth is rest with the Authorization header as given ("" for none).
func restAuth(t *testing.T, base, authorization, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s %s: %d %q is not JSON", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

func TestRESTPathsAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{})
	e.maas.Add(4, "standard")
	k := e.start(t, e.config(t))
	base, tok := k.RESTAddr(), e.token
	name := clusterName("rest")
	q := url.QueryEscape(name)

	code, v := rest(t, base, tok, "GET", "/api/v1/version", "")
	if code != 200 || v["ok"] != true || v["version_information"].(map[string]any)["go_version"] == nil {
		t.Fatalf("version: %d %v", code, v)
	}
	code, v = rest(t, base, tok, "POST", "/api/v1/cluster", `{"name":"`+name+`","k8s_version":"v1.32.13",
		"control_plane_nodes":{"count":1},"worker_node_pools":[{"name":"w","count":1,"instanceType":"standard"}]}`)
	if code != 200 || v["ok"] != true || v["cluster"].(map[string]any)["status"] != "PROVISIONING" {
		t.Fatalf("create: %d %v", code, v)
	}
	e.waitStatus(t, k.client, name, kaaspb.ClusterStatus_RUNNING, time.Minute)
	code, v = rest(t, base, tok, "GET", "/api/v1/cluster?name="+q, "")
	cl := v["cluster"].(map[string]any)
	if code != 200 || cl["status"] != "RUNNING" || !strings.Contains(cl["kubeconfig"].(string), "certificate-authority-data") || cl["status_message"] == nil {
		t.Fatalf("get: %d %v", code, v)
	}
	if code, v = rest(t, base, tok, "GET", "/api/v1/cluster/list", ""); code != 200 || len(v["clusters"].([]any)) != 1 {
		t.Fatalf("list: %d %v", code, v)
	}
	code, v = rest(t, base, tok, "GET", "/api/v1/cluster/nodesstatus?clusterName="+q, "")
	if code != 200 || v["Name"] != name || v["count"] != float64(2) || len(v["machines"].([]any)) != 2 {
		t.Fatalf("nodes: %d %v", code, v)
	}
	if m := v["machines"].([]any)[0].(map[string]any); m["maasNodeStatus"] != "Deployed" || m["k8sNodeStatus"] != "unknown" {
		t.Fatalf("machine: %v", m)
	}
	if code, v = rest(t, base, tok, "POST", "/api/v1/cluster/pool", `{"clusterName":"`+name+`","worker_node_pools":[{"name":"p","count":1}]}`); code != 200 || v["ok"] != true {
		t.Fatalf("add pool: %d %v", code, v)
	}
	if code, v = rest(t, base, tok, "PUT", "/api/v1/cluster/pool", `{"clusterName":"`+name+`","node_pools":[{"name":"w","count":0}]}`); code != 200 || v["ok"] != true {
		t.Fatalf("scale: %d %v", code, v)
	}
	e.waitStatus(t, k.client, name, kaaspb.ClusterStatus_RUNNING, time.Minute, "all 2 machines ready")
	if code, v = rest(t, base, tok, "DELETE", "/api/v1/cluster/pool?clusterName="+q+"&node_pool_names=p&node_pool_names=w", ""); code != 200 || v["ok"] != true {
		t.Fatalf("delete pools: %d %v", code, v)
	}
	e.waitStatus(t, k.client, name, kaaspb.ClusterStatus_RUNNING, time.Minute, "all 1 machines ready")
	code, v = rest(t, base, tok, "GET", "/api/v1/cluster/upgrade?name="+q, "")
	if code != 200 || v["ok"] != true || v["versions"].([]any)[0] != "v1.33.13" {
		t.Fatalf("upgrade info: %d %v", code, v)
	}
	if code, v = rest(t, base, tok, "PUT", "/api/v1/cluster/upgrade", `{"name":"`+name+`","version":"v1.33.13"}`); code != 200 || v["ok"] != true {
		t.Fatalf("upgrade: %d %v", code, v)
	}
	e.waitStatus(t, k.client, name, kaaspb.ClusterStatus_RUNNING, time.Minute, "v1.33.13")

	// Errors as upstream's gateway wrote them, with the HTTP status of the gRPC code.
	for _, tc := range []struct {
		method, path, body, token string
		status, code              int
		says                      string
	}{
		{"GET", "/api/v1/cluster/list", "", "", 401, 16, "no token"},
		{"GET", "/api/v1/cluster?name=Bad", "", tok, 400, 3, "name"},
		{"GET", "/api/v1/cluster?name=nope", "", tok, 404, 5, "nope"},
		{"POST", "/api/v1/cluster", `{"name":"Bad","bogus":1}`, tok, 400, 3, "name"}, // unknown fields ignored, as v1 did
		{"POST", "/api/v1/cluster", `{"name":`, tok, 400, 3, "request body"},
		{"PUT", "/api/v1/cluster/upgrade", `{"name":"` + name + `","version":"v1.32.13"}`, tok, 412, 9, "cannot move"}, // v1.8.5: 412
	} {
		code, v := rest(t, base, tc.token, tc.method, tc.path, tc.body)
		if code != tc.status || v["code"] != float64(tc.code) || !strings.Contains(v["message"].(string), tc.says) || v["error"] != v["message"] {
			t.Errorf("%s %s: %d %v; want %d code %d saying %q", tc.method, tc.path, code, v, tc.status, tc.code, tc.says)
		}
	}
	if code, v = rest(t, base, tok, "DELETE", "/api/v1/cluster?name="+q, ""); code != 200 || v["ok"] != true {
		t.Fatalf("delete: %d %v", code, v)
	}
	e.waitGone(t, k.client, name, time.Minute)
}

// TestRESTAsCNCTScripts calls the REST API as CNCT's scripts did — curl with the token in an
// Authorization header, jq reading .cluster.status and .cluster.kubeconfig, provider=ssh on the
// query — and checks what Plinth adds to upstream's API: the token (401 in grpc-gateway v1's
// error body without one) and roles (a viewer reads, and is refused writes with 403), and that
// a cluster being deleted reads STOPPING.
func TestRESTAsCNCTScripts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{ReleaseTime: 3 * time.Second})
	e.maas.Add(1, "standard")
	k := e.start(t, e.config(t))
	base, tok := k.RESTAddr(), e.token
	viewer := newUserToken(t, e, authz.Viewer)
	name := clusterName("script")
	q := url.QueryEscape(name)

	// The token: missing, another scheme, unknown — 401 in v1's body, nothing else in it.
	for _, authorization := range []string{"", "Basic YWRtaW46eA==", "Bearer not-a-token"} {
		code, v := restAuth(t, base, authorization, "GET", "/api/v1/cluster/list", "")
		if code != 401 || v["code"] != float64(16) || v["error"] != v["message"] || v["message"] == "" || len(v) != 3 {
			t.Errorf("Authorization %.12q: %d %v; want 401 {error, message, code 16}", authorization, code, v)
		}
	}
	if code, v := rest(t, base, tok, "GET", "/api/v1/cluster/list", ""); code != 200 || v["ok"] != true {
		t.Fatalf("list with the admin's token: %d %v", code, v)
	}
	if code, v := restAuth(t, base, "bearer "+tok, "GET", "/api/v1/cluster/list?provider=ssh", ""); code != 200 || v["ok"] != true {
		t.Fatalf("list with a lower-case scheme: %d %v", code, v)
	}

	create := `{"name":"` + name + `","k8s_version":"v1.32.13","control_plane_nodes":{"count":1},"worker_node_pools":[]}`
	if code, v := rest(t, base, viewer, "POST", "/api/v1/cluster", create); code != 403 || v["code"] != float64(7) || v["error"] != v["message"] {
		t.Fatalf("a viewer's create: %d %v; want 403 code 7", code, v)
	}
	if code, v := rest(t, base, viewer, "GET", "/api/v1/cluster/list", ""); code != 200 || v["ok"] != true || v["clusters"] != nil {
		t.Fatalf("a viewer's list: %d %v (and the refused create made nothing)", code, v)
	}
	code, v := rest(t, base, tok, "POST", "/api/v1/cluster", create)
	if code != 200 || v["ok"] != true || v["cluster"].(map[string]any)["status"] != "PROVISIONING" {
		t.Fatalf("create: %d %v", code, v)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, v = rest(t, base, viewer, "GET", "/api/v1/cluster?name="+q+"&provider=ssh", "")
		if cl, _ := v["cluster"].(map[string]any); cl["status"] == "RUNNING" {
			if kc, _ := cl["kubeconfig"].(string); !strings.Contains(kc, "certificate-authority-data") {
				t.Fatalf(".cluster.kubeconfig: %v", cl)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not RUNNING: %v", v)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, v := rest(t, base, viewer, "DELETE", "/api/v1/cluster?name="+q, ""); code != 403 || v["code"] != float64(7) {
		t.Fatalf("a viewer's delete: %d %v; want 403", code, v)
	}
	if code, v := rest(t, base, tok, "DELETE", "/api/v1/cluster?name="+q+"&provider=ssh", ""); code != 200 || v["ok"] != true {
		t.Fatalf("delete: %d %v", code, v)
	}
	code, v = rest(t, base, tok, "GET", "/api/v1/cluster?name="+q+"&provider=ssh", "")
	if cl, _ := v["cluster"].(map[string]any); code != 200 || cl["status"] != "STOPPING" {
		t.Fatalf("a cluster being deleted: %d %v; want .cluster.status STOPPING", code, v)
	}
	for deadline = time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		code, v = rest(t, base, tok, "GET", "/api/v1/cluster?name="+q, "")
		if code == 404 && v["code"] == float64(5) && len(v) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deleted cluster: %d %v; want 404 code 5", code, v)
		}
	}
}

// newUserToken creates a user with role through auth's AdminService and signs it in.
func newUserToken(t *testing.T, e *env, role authz.Role) string {
	t.Helper()
	return newNamedUserToken(t, e, "kaas-"+string(role), role)
}

// newNamedUserToken is newUserToken for a user called name, so that a test can have several
// users of one role.
func newNamedUserToken(t *testing.T, e *env, name string, role authz.Role) string {
	t.Helper()
	conn := grpcConn(t, e.authAddr)
	ctx := ctxT(t, 30*time.Second)
	admin := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+e.token)
	pw := name + "-password"
	if _, err := adminpb.NewAdminServiceClient(conn).CreateUser(admin, &adminpb.CreateUserRequest{Username: name, Password: pw, Role: string(role)}); err != nil {
		t.Fatal(err)
	}
	resp, err := authpb.NewAuthServiceClient(conn).Login(ctx, &authpb.LoginRequest{Username: name, Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { assertNoSecrets(t, e.logs.String(), resp.GetToken()) })
	return resp.GetToken()
}
