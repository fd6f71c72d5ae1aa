package console

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func getEncoded(t *testing.T, h http.Handler, target, acceptEncoding string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	r := rec.Result()
	return r, []byte(body(t, r))
}

// TestAssetsServedPrecompressed: the build's script goes out as the committed brotli or gzip
// variant when the browser accepts it (br first), as a JavaScript Content-Type either way,
// varying by Accept-Encoding; as the plain file when neither is accepted.
func TestAssetsServedPrecompressed(t *testing.T) {
	h := Handler()
	script := builtAsset(t, ".js")
	plain, err := fs.ReadFile(dist, "dist"+script)
	if err != nil {
		t.Fatal(err)
	}
	br, err := fs.ReadFile(dist, "dist"+script+".br")
	if err != nil {
		t.Fatalf("the build has no brotli variant of %s (console/check-dist -w writes it): %v", script, err)
	}
	for _, tc := range []struct{ accept, coding string }{
		{"gzip, deflate, br, zstd", "br"}, // Chromium's
		{"br;q=1.0, gzip;q=0.8", "br"},
		{"gzip", "gzip"},
		{"br;q=0, gzip", "gzip"},
		{"*", "br"},
		{"*;q=0.5, br;q=0", "gzip"},
		{"", ""},
		{"identity", ""},
		{"gzip;q=0, br;q=0", ""},
		{"*;q=0", ""},
	} {
		r, b := getEncoded(t, h, script, tc.accept)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Encoding") != tc.coding {
			t.Errorf("Accept-Encoding %q: %d, Content-Encoding %q; want %q", tc.accept, r.StatusCode, r.Header.Get("Content-Encoding"), tc.coding)
			continue
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
			t.Errorf("Accept-Encoding %q: Content-Type %q, want text/javascript", tc.accept, ct)
		}
		if !strings.Contains(r.Header.Get("Vary"), "Accept-Encoding") {
			t.Errorf("Accept-Encoding %q: no Vary: Accept-Encoding", tc.accept)
		}
		if r.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || r.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("Accept-Encoding %q: lost the asset headers: %v", tc.accept, r.Header)
		}
		var got []byte
		switch tc.coding {
		case "br":
			if !bytes.Equal(b, br) {
				t.Errorf("Accept-Encoding %q: the body is not the committed .br", tc.accept)
			}
			continue
		case "gzip":
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("Accept-Encoding %q: %v", tc.accept, err)
			}
			if got, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		default:
			got = b
		}
		if !bytes.Equal(got, plain) {
			t.Errorf("Accept-Encoding %q: %d bytes decoded, want the script's %d", tc.accept, len(got), len(plain))
		}
	}
	if len(br) >= len(plain)/3 {
		t.Errorf("brotli variant %d bytes of %d: not compressed", len(br), len(plain))
	}
}

// TestSmallFilesAndIndexStayPlain: files without variants (index.html, under 1 KiB) are served
// as before, without Content-Encoding or Vary.
func TestSmallFilesAndIndexStayPlain(t *testing.T) {
	h := Handler()
	for _, p := range []string{"/", "/storage"} {
		r, b := getEncoded(t, h, p, "gzip, br")
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Encoding") != "" || !strings.Contains(string(b), `<div id="root">`) {
			t.Errorf("GET %s: %d, Content-Encoding %q", p, r.StatusCode, r.Header.Get("Content-Encoding"))
		}
	}
}

func TestAccepts(t *testing.T) {
	for _, tc := range []struct {
		header, coding string
		want           bool
	}{
		{"gzip, br", "br", true},
		{"GZIP", "gzip", true},
		{"br;q=0", "br", false},
		{"br; q=0.001", "br", true},
		{"br;q=0.0", "br", false},
		{"br;q=x", "br", false},
		{"*;q=0, br", "br", true},
		{"*", "gzip", true},
		{"*;q=0", "gzip", false},
		{"", "gzip", false},
		{"identity", "gzip", false},
		{"gzip-x", "gzip", false},
	} {
		if got := accepts(tc.header, tc.coding); got != tc.want {
			t.Errorf("accepts(%q, %q) = %v, want %v", tc.header, tc.coding, got, tc.want)
		}
	}
}
