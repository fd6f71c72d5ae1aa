package front

import (
	"net/http"
	"slices"
	"strings"
)

// Browsers may send these request headers and read these response headers across origins:
// the ones gRPC-Web and Connect clients use, plus the bearer token. Tokens travel in the
// authorization header, never in cookies, so credentials mode is never allowed and a page of
// another origin cannot ride on a user's session.
var (
	corsAllowHeaders = []string{
		"authorization", "content-type", "x-grpc-web", "x-user-agent", "connect-protocol-version",
		"connect-timeout-ms", "grpc-timeout", "traceparent", "tracestate",
	}
	corsExposeHeaders = []string{"grpc-status", "grpc-message", "grpc-status-details-bin"}
	corsAllowMethods  = []string{http.MethodGet, http.MethodPost, http.MethodOptions}
)

// cors answers preflight requests and marks responses readable by the allowed origins.
type cors struct {
	any     bool
	origins []string
}

// newCORS allows the given origins ("https://console.example"); "*" allows every origin.
func newCORS(origins []string) cors {
	c := cors{}
	for _, o := range origins {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if o == "*" {
			c.any = true
		} else if o != "" {
			c.origins = append(c.origins, strings.ToLower(o))
		}
	}
	return c
}

func (c cors) allowed(origin string) bool {
	return origin != "" && (c.any || slices.Contains(c.origins, strings.ToLower(origin)))
}

// handle sets the CORS headers of a cross-origin request and reports whether it was a
// preflight, which it answered.
func (c cors) handle(w http.ResponseWriter, r *http.Request) (answered bool) {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	if !c.allowed(origin) {
		if preflight {
			w.WriteHeader(http.StatusForbidden)
		}
		return preflight
	}
	if c.any {
		h.Set("Access-Control-Allow-Origin", "*")
	} else {
		h.Set("Access-Control-Allow-Origin", origin)
	}
	if !preflight {
		h.Set("Access-Control-Expose-Headers", strings.Join(corsExposeHeaders, ", "))
		return false
	}
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	h.Set("Access-Control-Allow-Methods", strings.Join(corsAllowMethods, ", "))
	h.Set("Access-Control-Allow-Headers", strings.Join(corsAllowHeaders, ", "))
	h.Set("Access-Control-Max-Age", "7200")
	w.WriteHeader(http.StatusNoContent)
	return true
}
