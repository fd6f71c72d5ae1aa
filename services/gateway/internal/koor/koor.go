// Package koor is what Koor data-control-center's web UI needs of its server besides the RPCs
// (which the gateway routes under routes.APIPrefix): the plain HTTP endpoints its Go server
// had (pkg/server/api at 22f234c) and its static build, served as that server served it.
// Nothing of Koor's code is here: the UI is a build the operator points the gateway at.
package koor

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path"
	"strings"
	"time"
)

// ClientConfig is the answer to POST /api/config, with the JSON names the UI reads
// (src/store/config.ts; v0.6.0's src/components/auth/LoginForm.vue). The providers are
// auth's OpenID providers: with any, the UI shows a "<label> Login" button for each (to
// /api/oauth2/login/<name>, package signin) instead of the password form.
type ClientConfig struct {
	Version string      `json:"version"`
	Login   LoginConfig `json:"login"`
}

// LoginConfig lists the UI's sign-in providers besides username and password.
type LoginConfig struct {
	Providers []Provider `json:"providers"`
}

// Provider is one OAuth2 sign-in button of the UI.
type Provider struct {
	Name  string `json:"name"`
	Label string `json:"label"`
}

// clearSiteData is the Clear-Site-Data value and body of GET /api/clear-site-data, as
// upstream's.
const (
	clearSiteData     = `"cache", "cookies", "storage"`
	clearSiteDataBody = "Your local site data should be cleared now, please go back to the data-control-center homepage yourself."
)

// Providers returns auth's OpenID providers as the UI lists them; nil: none.
type Providers func(ctx context.Context) ([]Provider, error)

// Endpoints are the UI's plain HTTP endpoints by "METHOD path", answered as upstream's server
// answered them: POST /api/config (the client configuration, version is Plinth's, the
// providers asked of auth each time, none when it cannot be asked: the UI then offers the
// password form, which fails as clearly), GET
// /api/ping ({"message":"Pong"}), GET /readiness ("OK"), GET /api/clear-site-data (asks the
// browser to drop the site's cache, cookies and storage: the UI keeps its token in
// localStorage).
func Endpoints(version string, providers Providers, log *slog.Logger) map[string]http.Handler {
	ping := []byte(`{"message":"Pong"}`)
	return map[string]http.Handler{
		"POST /api/config": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			list := []Provider{}
			if providers != nil {
				ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
				defer cancel()
				got, err := providers(ctx)
				if err != nil {
					log.WarnContext(ctx, "Koor's /api/config: cannot list auth's OpenID providers", "error", err)
				} else if got != nil {
					list = got
				}
			}
			cfg, _ := json.Marshal(ClientConfig{Version: version, Login: LoginConfig{Providers: list}}) // strings always encode
			fixed("application/json; charset=utf-8", cfg).ServeHTTP(w, r)
		}),
		"GET /api/ping":  fixed("application/json; charset=utf-8", ping),
		"GET /readiness": fixed("text/plain; charset=utf-8", []byte("OK")),
		"GET /api/clear-site-data": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Clear-Site-Data", clearSiteData)
			fixed("text/plain; charset=utf-8", []byte(clearSiteDataBody)).ServeHTTP(w, r)
		}),
	}
}

// fixed answers 200 with body.
func fixed(contentType string, body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(body)
	})
}

// UI serves a Koor UI build (Nuxt's .output/public, with index.html at its top) from dir as
// upstream's server did: a path that ends in a slash or has no dot is a page of the UI's
// client-side router and gets index.html; any other path is a file of the build, 404 when
// there is none (a stale page's asset must not get index.html as a script). Files are read
// through an os.Root, so no path leaves dir, symbolic links included; directories are
// never listed.
func UI(dir string) (http.Handler, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("PLINTH_GATEWAY_KOOR_UI_DIR: %w", err)
	}
	fsys := root.FS()
	if st, err := fs.Stat(fsys, "index.html"); err != nil || !st.Mode().IsRegular() {
		_ = root.Close()
		return nil, fmt.Errorf("PLINTH_GATEWAY_KOOR_UI_DIR: %s has no index.html: name the Koor UI's build (.output/public)", dir)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		name := "index.html"
		if p := r.URL.Path; !strings.HasSuffix(p, "/") && strings.Contains(p, ".") {
			name = strings.TrimPrefix(path.Clean("/"+p), "/")
		}
		serveFile(w, r, fsys, name)
	}), nil
}

// serveFile serves the regular file name of fsys, or 404.
func serveFile(w http.ResponseWriter, r *http.Request, fsys fs.FS, name string) {
	f, err := fsys.Open(name) // a link out of the root is refused like a missing file
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	rs, ok := f.(interface {
		Read([]byte) (int, error)
		Seek(int64, int) (int64, error)
	})
	if !ok {
		http.Error(w, "cannot read the file", http.StatusInternalServerError)
		return
	}
	if strings.HasPrefix(name, "_nuxt/") {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable") // hashed names
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, name, st.ModTime(), rs)
}
