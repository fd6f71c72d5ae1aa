package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas/maastest"
)

// rest calls upstream's REST API as CNCT's REST clients did (grpc-gateway v1 JSON: proto
// field names, enums by name).
func rest(t *testing.T, base, token, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
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
		{"POST", "/api/v1/cluster", `{"name":"x","bogus":1}`, tok, 400, 3, "request body"},
		{"POST", "/api/v1/cluster", `{"name":`, tok, 400, 3, "request body"},
		{"PUT", "/api/v1/cluster/upgrade", `{"name":"` + name + `","version":"v1.32.13"}`, tok, 400, 9, "cannot move"},
		{"PATCH", "/api/v1/cluster", "", tok, 405, 12, ""},
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
