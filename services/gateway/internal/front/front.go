// Package front is the gateway's one port: HTTP/1.1 and cleartext HTTP/2 (h2c) on the same
// listener. Native gRPC goes straight to the gateway's gRPC server; gRPC-Web and Connect
// (what browsers speak) are translated to gRPC by connectrpc.com/vanguard first, so every
// call meets the same route table, token check, access log and metrics, and errors reach the
// client in the protocol it spoke. Other GET requests go to the console, when one is mounted.
// Every route is also served under routes.APIPrefix (Koor's UI's base URL), and plain HTTP
// endpoints (Koor's POST /api/config, …) are answered before any of this.
package front

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"strings"
	"time"

	"connectrpc.com/vanguard"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/plinth-dev/plinth/libs/platform/netlimit"
	"github.com/plinth-dev/plinth/services/gateway/internal/proxy"
	"github.com/plinth-dev/plinth/services/gateway/routes"
)

// MaxHeaderBytes bounds a request's headers on HTTP/1.1 (routes.MaxRequestHeaderBytes):
// they are parsed before anything can refuse them.
const MaxHeaderBytes = routes.MaxRequestHeaderBytes

// ReadHeaderTimeout bounds how long an HTTP/1.1 client may take to send a request's headers
// (and the router's wait for a connection's first bytes): routes.RequestHeadersTimeout.
const ReadHeaderTimeout = routes.RequestHeadersTimeout

// DefaultIdleTimeout closes a connection that carried no request for this long
// (PLINTH_GATEWAY_IDLE_TIMEOUT): HTTP/1.1 keep-alive connections by the HTTP server's
// IdleTimeout, HTTP/2 (gRPC) connections by the gRPC server's MaxConnectionIdle. Browsers
// reopen a closed keep-alive connection unnoticed, gRPC clients reconnect on GOAWAY.
const DefaultIdleTimeout = routes.IdleTimeout

// ServerOptions are the limits and timeouts of the gateway's gRPC server on this port: a
// request message over every route's limit (routes.LargestRequestBytes, capped by
// maxMessageBytes) is refused from its 5-byte prefix before it is read (grpc-go checks the
// length first); responses up to maxMessageBytes; a connection without calls for idle gets
// GOAWAY and is closed, as HTTP/1.1's are (0: DefaultIdleTimeout); a connection carries at
// most MaxConcurrentStreams calls at once.
func ServerOptions(maxMessageBytes int, idle time.Duration) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(min(maxMessageBytes, routes.LargestRequestBytes())),
		grpc.MaxSendMsgSize(maxMessageBytes),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: idleTimeout(idle)}),
		grpc.MaxConcurrentStreams(MaxConcurrentStreams),
	}
}

func idleTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultIdleTimeout
	}
	return d
}

// Options configure a Handler.
type Options struct {
	// GRPC is the gateway's gRPC server (proxy, health, reflection).
	GRPC *grpc.Server
	// Services are the full names of the services browsers may call (gRPC-Web, Connect).
	Services []string
	// CORSOrigins lists the origins browsers may call from; "*" allows all.
	CORSOrigins []string
	// Console serves GET requests that are not RPCs; nil answers them 404.
	Console http.Handler
	// Endpoints are plain HTTP endpoints answered before any RPC dispatch, by "METHOD path"
	// with the path exactly as the client escaped it ("POST /api/config": Koor's UI's).
	Endpoints map[string]http.Handler
	// Pages are plain HTTP routes matched by pattern (the OpenID sign-in's redirects), also
	// answered before any RPC dispatch; nil: none.
	Pages *http.ServeMux
	// MaxMessageBytes caps every message of gRPC-Web and Connect calls, either way; a request
	// message is further bounded by its route's backend (routes.MaxRequestBytes). 0: the
	// largest route's request limit.
	MaxMessageBytes int
}

// Handler dispatches requests on the gateway's port by protocol.
type Handler struct {
	grpc      *grpc.Server
	web       http.Handler
	cors      cors
	console   http.Handler
	endpoints map[string]http.Handler
	pages     *http.ServeMux
	// maxMessageBytes is Options.MaxMessageBytes.
	maxMessageBytes int
}

// New builds the handler; the Connect/gRPC-Web transcoder is built for opts.Services.
func New(o Options) (*Handler, error) {
	h := &Handler{grpc: o.GRPC, cors: newCORS(o.CORSOrigins), console: o.Console, endpoints: o.Endpoints,
		pages: o.Pages, maxMessageBytes: o.MaxMessageBytes}
	services := make([]*vanguard.Service, 0, len(o.Services))
	for _, name := range o.Services {
		services = append(services, vanguard.NewService(name, o.GRPC))
	}
	t, err := vanguard.NewTranscoder(services,
		vanguard.WithDefaultServiceOptions(
			vanguard.WithTargetProtocols(vanguard.ProtocolGRPC),
			vanguard.WithTargetCodecs(vanguard.CodecProto),
			// What vanguard may buffer of one message either way (its default is 4 GiB):
			// responses up to the cap; requests were bounded per route before (bound), and
			// the gRPC server refuses a later stream message over its route's limit.
			vanguard.WithMaxMessageBufferBytes(uint32(bufferLimit(o.MaxMessageBytes))),
		),
		// The handler the request came to (WithConsole shares this transcoder).
		vanguard.WithUnknownHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Context().Value(handlerKey{}).(*Handler).notRPC(w, r)
		})),
		vanguard.WithCodec(newRequestJSON), // a body that is not JSON is InvalidArgument
	)
	if err != nil {
		return nil, fmt.Errorf("front: gRPC-Web/Connect transcoder: %w", err)
	}
	h.web = t
	return h, nil
}

// WithConsole is h serving c instead of its console, for another listener: the same
// transcoder, route table, CORS, limits and endpoints.
func (h *Handler) WithConsole(c http.Handler) *Handler {
	h2 := *h
	h2.console = c
	return &h2
}

// messageLimit is the largest message of a call of method ("/pkg.Service/Method") that the
// front reads: its backend's request limit, capped by max.
func messageLimit(method string, max int) int {
	n := routes.DefaultMaxRequestBytes
	if r, ok := routes.Lookup(method); ok {
		n = routes.MaxRequestBytes(r.Backend)
	}
	if max > 0 {
		n = min(n, max)
	}
	return n
}

// bufferLimit is the largest message vanguard buffers: max, or without one the largest
// request any route takes.
func bufferLimit(max int) int {
	if max > 0 {
		return max
	}
	return routes.LargestRequestBytes()
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.cors.handle(w, r) {
		return
	}
	if e, ok := h.endpoints[r.Method+" "+r.URL.EscapedPath()]; ok {
		e.ServeHTTP(w, r)
		return
	}
	if h.pages != nil && protocolOf(r) == "" {
		if _, pattern := h.pages.Handler(r); pattern != "" {
			h.pages.ServeHTTP(w, r)
			return
		}
	}
	proto := protocolOf(r)
	if proto == "grpc" {
		// The proxy takes the prefix off a gRPC call's method itself (native gRPC on the
		// port's own HTTP/2 transport never comes here).
		h.grpc.ServeHTTP(w, r.WithContext(proxy.WithProtocol(r.Context(), proto)))
		return
	}
	r, ok := underAPI(r)
	if !ok {
		http.NotFound(w, r)
		return
	}
	ctx := r.Context()
	switch proto {
	case "":
		h.notRPC(w, r)
	default:
		limit := messageLimit(r.URL.Path, h.maxMessageBytes)
		if headersTooLarge(w, r) || connectVersion(w, r, proto) || readRequest(w, r, proto, limit) {
			return
		}
		ctx = context.WithValue(proxy.WithProtocol(ctx, proto), handlerKey{}, h)
		h.web.ServeHTTP(w, r.WithContext(ctx))
	}
}

// notRPC serves what is not a call of a routed service: the console's GET requests, else 404
// (always under routes.APIPrefix, as upstream's server did).
func (h *Handler) notRPC(w http.ResponseWriter, r *http.Request) {
	if h.console != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.Context().Value(apiKey{}) == nil {
		h.console.ServeHTTP(w, r)
		return
	}
	http.NotFound(w, r)
}

// handlerKey carries the Handler a request came to, for the transcoder's unknown handler.
type handlerKey struct{}

// apiKey marks a request that came under routes.APIPrefix.
type apiKey struct{}

// underAPI serves a request under routes.APIPrefix as the same request without it: its path,
// decoded and escaped, loses the prefix (so the route table, the token rule, the roles and the
// per-route limit see the path they would see without it), and it is marked so that what is
// not an RPC is 404, never the console. A request not under the prefix passes unchanged.
// ok is false for a path that is not in its clean form after the prefix ("/api//x",
// "/api/../x", "/api/%2e%2e/x", "/api/x/"): no route has such a path, and no console file
// is reached through the prefix.
func underAPI(r *http.Request) (_ *http.Request, ok bool) {
	escaped, api := routes.TrimAPIPrefix(r.URL.EscapedPath())
	if !api {
		return r, true
	}
	// EscapedPath began with the prefix, so the decoded path does too.
	p, _ := routes.TrimAPIPrefix(r.URL.Path)
	if path.Clean(p) != p || path.Clean(escaped) != escaped {
		return r, false
	}
	u := *r.URL
	u.Path = p
	if u.RawPath != "" {
		u.RawPath = escaped
	}
	r = r.WithContext(context.WithValue(r.Context(), apiKey{}, true))
	r.URL = &u
	r.RequestURI = u.RequestURI()
	return r, true
}

// protocolOf names the RPC protocol of a request by its content type (and, for Connect's
// unary GET, its query): "grpc", "grpc-web", "connect", or "" for a plain HTTP request.
func protocolOf(r *http.Request) string {
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	switch {
	case strings.HasPrefix(ct, "application/grpc-web"):
		return "grpc-web"
	case strings.HasPrefix(ct, "application/grpc"):
		if r.ProtoMajor == 2 {
			return "grpc"
		}
		return "grpc-web" // gRPC over HTTP/1.1 cannot work; vanguard answers it properly
	case strings.HasPrefix(ct, "application/connect+"),
		r.Method == http.MethodPost && (strings.HasPrefix(ct, "application/json") || strings.HasPrefix(ct, "application/proto")):
		return "connect"
	case r.Method == http.MethodGet && r.URL.Query().Has("connect"):
		return "connect"
	}
	return ""
}

// ServeOptions configure Serve.
type ServeOptions struct {
	// Grace is how long in-flight calls may take to finish once ctx ends.
	Grace time.Duration
	// IdleTimeout closes an HTTP/1.1 keep-alive connection without a request for this long
	// (0: DefaultIdleTimeout); give the gRPC server the same through ServerOptions.
	IdleTimeout time.Duration
	// Conns admits every accepted connection (the connection caps); nil: no caps.
	Conns *netlimit.Conns
	// HeaderTimeout bounds how long a connection may take to send its first request's
	// headers, HTTP/1.1 or HTTP/2 (0: ReadHeaderTimeout).
	HeaderTimeout time.Duration
	// BodyTimeout bounds how long an HTTP/1.1 request's body may take (0: RequestBodyTimeout).
	BodyTimeout time.Duration
}

// Serve serves the port on lis until ctx ends: HTTP/2 prior-knowledge connections (gRPC
// clients) on gs's own transport, HTTP/1.1 connections (browsers: gRPC-Web, Connect, the
// console) through h; a connection over o.Conns's caps is closed at accept. Then it stops
// gracefully within o.Grace — in-flight calls finish, streams were ended by the proxy's
// lifetime — and cuts what remains.
func Serve(ctx context.Context, lis net.Listener, h http.Handler, gs *grpc.Server, o ServeOptions) error {
	headerTimeout, bodyTimeout := cmp.Or(o.HeaderTimeout, ReadHeaderTimeout), cmp.Or(o.BodyTimeout, RequestBodyTimeout)
	sp := newSplit(lis, o.Conns, headerTimeout)
	srv := &http.Server{
		Handler: bodyDeadline(h, bodyTimeout), MaxHeaderBytes: MaxHeaderBytes,
		ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout(o.IdleTimeout),
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(sp.h1) }()
	go func() { errc <- gs.Serve(sp.h2) }()
	var err error
	select {
	case err = <-errc:
		if errors.Is(err, http.ErrServerClosed) || errors.Is(err, grpc.ErrServerStopped) {
			err = nil
		} else {
			err = fmt.Errorf("gateway: serve: %w", err)
		}
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), o.Grace)
	defer cancel()
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	if serr := srv.Shutdown(sctx); serr != nil {
		_ = srv.Close()
	}
	select {
	case <-stopped:
	case <-sctx.Done():
		gs.Stop()
	}
	_ = sp.close()
	return err
}
