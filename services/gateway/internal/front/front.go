// Package front is the gateway's one port: HTTP/1.1 and cleartext HTTP/2 (h2c) on the same
// listener. Native gRPC goes straight to the gateway's gRPC server; gRPC-Web and Connect
// (what browsers speak) are translated to gRPC by connectrpc.com/vanguard first, so every
// call meets the same route table, token check, access log and metrics, and errors reach the
// client in the protocol it spoke. Other GET requests go to the console, when one is mounted.
package front

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/vanguard"
	"google.golang.org/grpc"

	"github.com/plinth-dev/plinth/services/gateway/internal/proxy"
)

// MaxHeaderBytes bounds a request's headers (a token, a trace context, a browser's usual
// headers fit many times over): they are parsed before anything can refuse them.
const MaxHeaderBytes = 32 << 10

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
}

// Handler dispatches requests on the gateway's port by protocol.
type Handler struct {
	grpc    *grpc.Server
	web     http.Handler
	cors    cors
	console http.Handler
}

// New builds the handler; the Connect/gRPC-Web transcoder is built for opts.Services.
func New(o Options) (*Handler, error) {
	h := &Handler{grpc: o.GRPC, cors: newCORS(o.CORSOrigins), console: o.Console}
	services := make([]*vanguard.Service, 0, len(o.Services))
	for _, name := range o.Services {
		services = append(services, vanguard.NewService(name, o.GRPC))
	}
	t, err := vanguard.NewTranscoder(services,
		vanguard.WithDefaultServiceOptions(
			vanguard.WithTargetProtocols(vanguard.ProtocolGRPC),
			vanguard.WithTargetCodecs(vanguard.CodecProto),
		),
		vanguard.WithUnknownHandler(http.HandlerFunc(h.notRPC)),
	)
	if err != nil {
		return nil, fmt.Errorf("front: gRPC-Web/Connect transcoder: %w", err)
	}
	h.web = t
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.cors.handle(w, r) {
		return
	}
	ctx := r.Context()
	switch proto := protocolOf(r); proto {
	case "grpc":
		h.grpc.ServeHTTP(w, r.WithContext(proxy.WithProtocol(ctx, proto)))
	case "":
		h.notRPC(w, r)
	default:
		h.web.ServeHTTP(w, r.WithContext(proxy.WithProtocol(ctx, proto)))
	}
}

// notRPC serves what is not a call of a routed service: the console's GET requests, else 404.
func (h *Handler) notRPC(w http.ResponseWriter, r *http.Request) {
	if h.console != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		h.console.ServeHTTP(w, r)
		return
	}
	http.NotFound(w, r)
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

// Serve serves the port on lis until ctx ends: HTTP/2 prior-knowledge connections (gRPC
// clients) on gs's own transport, HTTP/1.1 connections (browsers: gRPC-Web, Connect, the
// console) through h. Then it stops gracefully within grace — in-flight calls finish, streams
// were ended by the proxy's lifetime — and cuts what remains.
func Serve(ctx context.Context, lis net.Listener, h http.Handler, gs *grpc.Server, grace time.Duration) error {
	sp := newSplit(lis)
	srv := &http.Server{
		Handler: h, MaxHeaderBytes: MaxHeaderBytes,
		ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute,
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
	sctx, cancel := context.WithTimeout(context.Background(), grace)
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
