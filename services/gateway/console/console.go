// Package console serves the Plinth web console (console/ at the repository root, built with
// Vite into dist/ and committed) from files embedded in the gateway binary, so running the
// suite needs no Node.js.
package console

import (
	"embed"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

//go:embed dist
var dist embed.FS

// Security headers of every answer: the console loads only its own scripts and styles and
// talks only to its own origin (the gateway); no other site may frame it.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler serves the console: files under /assets/ (their names carry a content hash, so they
// are cached for a year), other files of the build by name, and index.html for every other
// path, which the console's client-side router resolves (/storage, /vagrant, …).
func Handler() http.Handler {
	root, err := fs.Sub(dist, "dist")
	if err != nil { // fs.Sub fails only for an invalid name; "dist" is valid
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "the console is not built into this gateway", http.StatusInternalServerError)
		})
	}
	return handler(root)
}

func handler(root fs.FS) http.Handler {
	index, indexErr := fs.ReadFile(root, "index.html")
	files := http.FileServerFS(root)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		switch {
		case strings.HasPrefix(name, "assets/"):
			if !isFile(root, name) {
				// A stale page asking for an asset of an older build: index.html here would be
				// parsed as a script or stylesheet and fail obscurely.
				http.NotFound(w, r)
				return
			}
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
			serveFile(w, r, root, files, name)
		case name != "" && name != "index.html" && isFile(root, name):
			h.Set("Cache-Control", "no-cache")
			serveFile(w, r, root, files, name)
		default:
			if indexErr != nil {
				http.Error(w, "the console is not built into this gateway", http.StatusNotFound)
				return
			}
			// index.html names the current build's assets: revalidate it every time.
			h.Set("Cache-Control", "no-cache")
			h.Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			if r.Method == http.MethodGet {
				_, _ = w.Write(index)
			}
		}
	})
}

// encodings are the precompressed variants the build carries (console/compress.mjs writes
// <file>.br and <file>.gz beside every compressible file over 1 KiB), best first.
var encodings = []struct{ coding, suffix string }{{"br", ".br"}, {"gzip", ".gz"}}

// serveFile answers with name's best precompressed variant the client accepts (its bytes as
// they are, Content-Encoding set, the Content-Type of name itself), else with name. A file
// that has variants varies by Accept-Encoding, whichever is sent. Ranges and conditional
// requests apply to the bytes sent, as HTTP defines for an encoded representation.
func serveFile(w http.ResponseWriter, r *http.Request, root fs.FS, files http.Handler, name string) {
	var variants bool
	for _, e := range encodings {
		if !isFile(root, name+e.suffix) {
			continue
		}
		variants = true
		if !accepts(r.Header.Get("Accept-Encoding"), e.coding) {
			continue
		}
		f, err := root.Open(name + e.suffix)
		if err != nil {
			break
		}
		defer f.Close()
		rs, ok := f.(io.ReadSeeker)
		if !ok { // embed.FS files seek; another fs.FS might not
			break
		}
		h := w.Header()
		h.Add("Vary", "Accept-Encoding")
		h.Set("Content-Encoding", e.coding)
		if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
			h.Set("Content-Type", ct)
		}
		http.ServeContent(w, r, name, time.Time{}, rs)
		return
	}
	if variants {
		w.Header().Add("Vary", "Accept-Encoding")
	}
	files.ServeHTTP(w, r)
}

// accepts reports whether an Accept-Encoding header allows coding: named with a q above 0,
// or not named and allowed by a "*" with a q above 0 (RFC 9110, 12.5.3).
func accepts(header, coding string) bool {
	star := false
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(part, ";")
		name = strings.ToLower(strings.TrimSpace(name))
		if name != coding && name != "*" {
			continue
		}
		ok := true
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "q") {
				q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				ok = err == nil && q > 0
			}
		}
		if name == coding {
			return ok
		}
		star = ok
	}
	return star
}

func isFile(root fs.FS, name string) bool {
	st, err := fs.Stat(root, name)
	return err == nil && st.Mode().IsRegular()
}
