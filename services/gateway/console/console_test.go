package console

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, target string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The embedded build is the real one: index.html loads a hashed script from assets/.
func builtAsset(t *testing.T, ext string) string {
	t.Helper()
	entries, err := fs.ReadDir(dist, "dist/assets")
	if err != nil {
		t.Fatalf("the console build is not embedded (run console/check-dist): %v", err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ext) {
			return "/assets/" + e.Name()
		}
	}
	t.Fatalf("no %s asset in the embedded build", ext)
	return ""
}

func TestClientRoutesServeIndex(t *testing.T) {
	h := Handler()
	script := builtAsset(t, ".js")
	for _, p := range []string{"/", "/signin", "/storage", "/vagrant", "/clusters/", "/volumes?x=1", "/index.html", "/../../etc/passwd"} {
		r := get(t, h, http.MethodGet, p)
		b := body(t, r)
		if r.StatusCode != http.StatusOK || !strings.Contains(b, `<div id="root">`) || !strings.Contains(b, script) {
			t.Errorf("GET %s: %d, want index.html naming %s; got %.200q", p, r.StatusCode, script, b)
		}
		if got := r.Header.Get("Cache-Control"); got != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q, want no-cache", p, got)
		}
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: Content-Type %q", p, r.Header.Get("Content-Type"))
		}
		if !strings.Contains(r.Header.Get("Content-Security-Policy"), "connect-src 'self'") {
			t.Errorf("GET %s: no CSP", p)
		}
	}
}

func TestAssetsAreLongCached(t *testing.T) {
	h := Handler()
	for ext, ctype := range map[string]string{".js": "text/javascript", ".css": "text/css"} {
		p := builtAsset(t, ext)
		r := get(t, h, http.MethodGet, p)
		b := body(t, r)
		if r.StatusCode != http.StatusOK || len(b) == 0 || strings.Contains(b, `<div id="root">`) {
			t.Fatalf("GET %s: %d, %d bytes", p, r.StatusCode, len(b))
		}
		if got := r.Header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
			t.Errorf("GET %s: Cache-Control %q", p, got)
		}
		if got := r.Header.Get("Content-Type"); !strings.HasPrefix(got, ctype) {
			t.Errorf("GET %s: Content-Type %q, want %s", p, got, ctype)
		}
	}
}

func TestMissingAssetIsNotIndex(t *testing.T) {
	r := get(t, Handler(), http.MethodGet, "/assets/index-old.js")
	if r.StatusCode != http.StatusNotFound {
		t.Fatalf("stale asset: %d, want 404", r.StatusCode)
	}
	if r.Header.Get("Cache-Control") != "" {
		t.Errorf("a 404 must not be cached for a year: %q", r.Header.Get("Cache-Control"))
	}
}

func TestOnlyGetAndHead(t *testing.T) {
	h := Handler()
	if r := get(t, h, http.MethodHead, "/storage"); r.StatusCode != http.StatusOK || body(t, r) != "" {
		t.Errorf("HEAD: %d", r.StatusCode)
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		r := get(t, h, m, "/storage")
		if r.StatusCode != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: %d, Allow %q", m, r.StatusCode, r.Header.Get("Allow"))
		}
	}
}

func TestNoSourcemapsShipped(t *testing.T) {
	total := 0
	err := fs.WalkDir(dist, "dist", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".map") {
			t.Errorf("sourcemap embedded: %s", p)
		}
		if !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += int(info.Size())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every file is there three times (plain, .gz, .br). The budget catches what must never
	// be embedded (sourcemaps, a second bundle, unminified code); it grew from 1 MiB to
	// 1.125 MiB when the console gained OpenID sign-in and volume restores (1,043,903 →
	// 1,067,780 bytes).
	if budget := 1<<20 + 1<<17; total > budget {
		t.Errorf("the embedded console is %d bytes; keep it under %d", total, budget)
	}
}
