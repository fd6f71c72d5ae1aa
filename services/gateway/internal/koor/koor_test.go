package koor

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEndpoints(t *testing.T) {
	e := Endpoints("v1.2.3", nil, slog.New(slog.DiscardHandler))
	get := func(key string) *httptest.ResponseRecorder {
		method, path, _ := strings.Cut(key, " ")
		w := httptest.NewRecorder()
		e[key].ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w
	}
	w := get("POST /api/config")
	var cfg map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &cfg); err != nil || w.Code != 200 {
		t.Fatalf("config: %d %s", w.Code, w.Body)
	}
	if w.Body.String() != `{"version":"v1.2.3","login":{"providers":[]}}` {
		t.Fatalf("config: %s", w.Body)
	}
	if w := get("GET /api/ping"); w.Body.String() != `{"message":"Pong"}` {
		t.Fatalf("ping: %s", w.Body)
	}
	if w := get("GET /readiness"); w.Body.String() != "OK" {
		t.Fatalf("readiness: %s", w.Body)
	}
	if w := get("GET /api/clear-site-data"); w.Header().Get("Clear-Site-Data") != `"cache", "cookies", "storage"` || w.Code != 200 {
		t.Fatalf("clear-site-data: %d %v", w.Code, w.Header())
	}
}

func TestUI(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "public")
	for name, body := range map[string]string{
		"public/index.html": "<html>koor</html>", "public/_nuxt/a.1.js": "js", "public/robots.txt": "robots",
		"public/dir.d/x.txt": "x", "secret.txt": "secret",
	} {
		p := filepath.Join(base, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	h, err := UI(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		method, path, body string
		code               int
	}{
		{"GET", "/", "<html>koor</html>", 200},
		{"GET", "/index.html", "<html>koor</html>", 200},
		{"GET", "/health", "<html>koor</html>", 200},
		{"GET", "/nodes/a/", "<html>koor</html>", 200},
		{"GET", "/dir.d/", "<html>koor</html>", 200}, // a slash: a page, as upstream
		{"GET", "/_nuxt/a.1.js", "js", 200},
		{"GET", "/robots.txt", "robots", 200},
		{"GET", "/_nuxt/gone.js", "", 404},
		{"GET", "/dir.d", "", 404},         // a directory is never listed
		{"GET", "/link.txt", "", 404},      // a link out of the build
		{"GET", "/../secret.txt", "", 404}, // cleaned: /secret.txt, absent
		{"HEAD", "/_nuxt/a.1.js", "", 200},
		{"POST", "/", "", 405},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(tt.method, "/", nil)
		r.URL.Path = tt.path
		h.ServeHTTP(w, r)
		if w.Code != tt.code || (tt.body != "" && w.Body.String() != tt.body) {
			t.Errorf("%s %s: %d %q", tt.method, tt.path, w.Code, w.Body)
		}
		if w.Code == 404 && strings.Contains(w.Body.String(), "secret") {
			t.Errorf("%s: leaked the file outside", tt.path)
		}
	}
	if _, err := UI(base); err == nil || !strings.Contains(err.Error(), "index.html") {
		t.Errorf("a dir without index.html: %v", err)
	}
	if _, err := UI(filepath.Join(base, "none")); err == nil || !strings.Contains(err.Error(), "PLINTH_GATEWAY_KOOR_UI_DIR") {
		t.Errorf("a missing dir: %v", err)
	}
}
