// Package console serves the Plinth web console (console/ at the repository root, built with
// Vite into dist/ and committed) from files embedded in the gateway binary, so running the
// suite needs no Node.js.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
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
			files.ServeHTTP(w, r)
		case name != "" && name != "index.html" && isFile(root, name):
			h.Set("Cache-Control", "no-cache")
			files.ServeHTTP(w, r)
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

func isFile(root fs.FS, name string) bool {
	st, err := fs.Stat(root, name)
	return err == nil && st.Mode().IsRegular()
}
