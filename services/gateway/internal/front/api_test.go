package front

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"
)

func TestUnderAPI(t *testing.T) {
	for _, tt := range []struct {
		target, path, escaped string
		ok, api               bool
	}{
		{"/stats.StatsService/GetClusterStats", "/stats.StatsService/GetClusterStats", "", true, false},
		{"/api/stats.StatsService/GetClusterStats", "/stats.StatsService/GetClusterStats", "", true, true},
		{"/api/stats.StatsService%2FGetClusterStats", "/stats.StatsService/GetClusterStats", "/stats.StatsService%2FGetClusterStats", true, true},
		{"/api%2Fstats.StatsService/GetClusterStats", "/api/stats.StatsService/GetClusterStats", "/api%2Fstats.StatsService/GetClusterStats", true, false},
		{"/api", "/api", "", true, false},
		{"/apix/y", "/apix/y", "", true, false},
		{"/api/", "/", "", true, true}, // the console's / is not served under /api: see below
		{"/api//x.Y/Z", "", "", false, true},
		{"/api/../x.Y/Z", "", "", false, true},
		{"/api/./x.Y/Z", "", "", false, true},
		{"/api/%2e%2e/x.Y/Z", "", "", false, true},
		{"/api/x.Y/Z%2F..%2FW", "", "", false, true}, // clean escaped, not clean decoded
		{"/api/x.Y/Z/", "", "", false, true},
	} {
		r := httptest.NewRequest(http.MethodPost, tt.target, nil)
		got, ok := underAPI(r)
		if ok != tt.ok {
			t.Errorf("%s: ok %v", tt.target, ok)
			continue
		}
		if !ok {
			continue
		}
		if got.URL.Path != tt.path || got.URL.RawPath != tt.escaped || (got.Context().Value(apiKey{}) != nil) != tt.api {
			t.Errorf("%s: path %q raw %q api %v", tt.target, got.URL.Path, got.URL.RawPath, got.Context().Value(apiKey{}) != nil)
		}
		if tt.api && got.RequestURI != got.URL.RequestURI() {
			t.Errorf("%s: RequestURI %q", tt.target, got.RequestURI)
		}
	}
}

// TestEndpointsAndAPIConsole: the endpoints answer by exact method and escaped path, before
// any protocol dispatch; a GET under /api that is not an endpoint never reaches the console.
func TestEndpointsAndAPIConsole(t *testing.T) {
	console := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "console") })
	h := &Handler{console: console, endpoints: map[string]http.Handler{
		"POST /api/config": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "config") }),
	}}
	for _, tt := range []struct {
		method, target, want string
		code                 int
	}{
		{"POST", "/api/config", "config", 200},
		{"GET", "/api/config", "", 404},
		{"POST", "/api%2Fconfig", "", 404},
		{"GET", "/api/anything", "", 404},
		{"GET", "/api/", "", 404},
		{"GET", "/anything", "console", 200},
		{"GET", "/api", "console", 200}, // not under the prefix: the console's
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(tt.method, tt.target, nil))
		if w.Code != tt.code || (tt.want != "" && strings.TrimSpace(w.Body.String()) != tt.want) {
			t.Errorf("%s %s: %d %q", tt.method, tt.target, w.Code, w.Body.String())
		}
	}
	c := h.WithConsole(http.NotFoundHandler())
	w := httptest.NewRecorder()
	c.ServeHTTP(w, httptest.NewRequest("GET", "/x", nil))
	if w.Code != 404 {
		t.Errorf("WithConsole: %d", w.Code)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/x", nil))
	if w.Body.String() != "console" {
		t.Errorf("WithConsole changed the original: %q", w.Body.String())
	}
}

// TestWithConsoleUnknownRPC: a request that looks like an RPC but names none (a Connect GET
// of a page) reaches the console of the handler it came to, not the original's.
func TestWithConsoleUnknownRPC(t *testing.T) {
	gs := grpc.NewServer()
	named := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, name) })
	}
	h, err := New(Options{GRPC: gs, Console: named("plinth")})
	if err != nil {
		t.Fatal(err)
	}
	for name, handler := range map[string]http.Handler{"plinth": h, "koor": h.WithConsole(named("koor"))} {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/page?connect=v1", nil))
		if w.Body.String() != name {
			t.Errorf("%s's handler served %q (%d)", name, w.Body.String(), w.Code)
		}
	}
}
