// Package proxy is the gateway's gRPC side: a transparent proxy (grpc-go's unknown-service
// handler with a codec that passes raw frames) that finds each call's route in the route
// table, checks the bearer token where the route needs one, and streams the call to its
// backend with the client's metadata, the verified account and x-forwarded-for; plus one
// access-log line and metrics per call.
package proxy

import (
	"context"
	"errors"
	"io"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/services/gateway/internal/catalog"
	"github.com/plinth-dev/plinth/services/gateway/routes"
)

// Authenticator checks the bearer token of the incoming call in ctx (authn.Verifier does).
type Authenticator interface {
	Authenticate(ctx context.Context, fullMethod string) (context.Context, error)
}

// Methods says which sides of a routed method stream (catalog.Catalog does).
type Methods interface {
	Shape(fullMethod string) (catalog.Shape, bool)
}

// Options configure a Proxy.
type Options struct {
	Backends *Backends
	Methods  Methods
	// Auth checks tokens for Token routes; nil refuses them with Unavailable (no auth backend).
	Auth Authenticator
	// UnaryTimeout, when set, bounds every unary call the client sent without a shorter
	// deadline; zero uses the route table's (routes.UnaryTimeout), as Envoy does.
	UnaryTimeout time.Duration
	// Lifetime ends when the gateway begins to shut down: streaming calls end with it, so the
	// graceful stop need not wait for streams that would run for hours.
	Lifetime context.Context
	Log      *Log
	// TracerProvider, when set, traces each call with a span of the gateway's own, a child
	// of the client's trace context and the parent of the backend's. Without one, as when no
	// collector is configured, the gateway makes no spans and passes the client's trace
	// context on as it came: spans nobody exports would cost every call and tell nobody
	// anything. Propagator reads (and, tracing, writes) the trace context; nil: the
	// OpenTelemetry global.
	TracerProvider trace.TracerProvider
	Propagator     propagation.TextMapPropagator
}

// Proxy forwards calls to backends.
type Proxy struct {
	o      Options
	codec  codec
	tracer trace.Tracer // nil: no spans
}

// New returns a Proxy; register its Handler as the gRPC server's unknown-service handler.
func New(o Options) *Proxy {
	if o.Lifetime == nil {
		o.Lifetime = context.Background()
	}
	if o.Propagator == nil {
		o.Propagator = otel.GetTextMapPropagator()
	}
	p := &Proxy{o: o, codec: newCodec()}
	if o.TracerProvider != nil {
		p.tracer = o.TracerProvider.Tracer(tracerName)
	}
	return p
}

// ServerOptions are the options the gateway's gRPC server needs for the proxy: the raw-frame
// codec and the unknown-service handler that every routed call reaches. The codec is wrapped
// as every Plinth server's is (server.RequestChecks): frames pass untouched (their backend
// decodes them), and a request to the gateway's own services (health, reflection) it cannot
// decode is refused with InvalidArgument, not Internal.
func (p *Proxy) ServerOptions() []grpc.ServerOption {
	return append(server.RequestChecks(p.codec), grpc.UnknownServiceHandler(p.Handle))
}

// Handle proxies one call (a grpc.StreamHandler).
func (p *Proxy) Handle(_ any, ss grpc.ServerStream) (err error) {
	start := time.Now()
	method, _ := grpc.MethodFromServerStream(ss)
	// A gRPC client whose base path is /api (Koor's): the same route as without it. Only the
	// gateway's own services (health, reflection) are not served under the prefix this way.
	method, _ = routes.TrimAPIPrefix(method)
	md, _ := metadata.FromIncomingContext(ss.Context()) // a copy: outgoing edits it
	ctx, span := p.startSpan(ss.Context(), md, method)
	call := Call{Method: method}
	defer func() {
		endSpan(span, call.Backend, err)
		p.o.Log.Finish(ctx, call, err, time.Since(start))
	}()

	r, ok := routes.Lookup(method)
	if !ok {
		// Why Unimplemented: the method is not part of any API this gateway routes; retrying
		// or fixing a token will not help.
		return status.Errorf(codes.Unimplemented, "unknown service or method %s", input.Quote(method))
	}
	call.Route, call.Backend = r.Path(), r.Backend
	conn, err := p.o.Backends.Conn(r.Backend)
	if err != nil {
		return err
	}
	shape, known := p.o.Methods.Shape(method)
	if !known {
		// No deadline of our own and full duplex for a method whose shape is unknown.
		shape = catalog.Shape{ClientStreams: true, ServerStreams: true}
	}
	streaming := shape.ClientStreams || shape.ServerStreams
	call.Streaming = streaming
	var account authn.Account
	if r.Access == routes.Token {
		if p.o.Auth == nil {
			return status.Error(codes.Unavailable, "token checks need the auth backend, which is not configured on this gateway")
		}
		actx, aerr := p.o.Auth.Authenticate(ctx, method)
		if aerr != nil {
			return aerr
		}
		// Authenticate also checked the account's role against the method (authz).
		account, _ = authn.AccountFrom(actx)
		// actx ends when auth revokes the token (a sign-out, a disabled user, a role
		// change): the backend call is made in it, so a stream ends with its token — also
		// to backends that take no Plinth token (lvmd-agent, cnpgi-plugin), which cannot end
		// it themselves — and the client is told Unauthenticated, not the Canceled the
		// backend call ends with. Not auth's own unary calls: Logout, a password change or
		// revoking one's own tokens end the very token they run with, and the revocation
		// event can reach this gateway before auth's answer does — that answer must pass.
		if !endsWithToken(r.Backend, streaming) {
			actx = ctx
		}
		ctx = actx
		defer func() {
			if ended := server.EndedBy(actx); ended != nil {
				err = ended
			}
		}()
	}
	var cancel context.CancelFunc
	if streaming {
		ctx, cancel = context.WithCancel(ctx)
		stop := context.AfterFunc(p.o.Lifetime, cancel)
		defer stop()
	} else if d := p.unaryTimeout(r.Backend); d > 0 && !deadlineWithin(ctx, d) {
		ctx, cancel = context.WithTimeout(ctx, d)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()

	pr, _ := peer.FromContext(ctx)
	out := outgoing(md, pr, account, p.tracer != nil)
	if p.tracer != nil {
		p.o.Propagator.Inject(ctx, mdCarrier(out))
	}
	ctx = metadata.NewOutgoingContext(ctx, out)
	cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodecV2(p.codec))
	if err != nil {
		return err
	}
	if !shape.ClientStreams {
		return forwardOne(ss, cs)
	}
	return p.pump(ss, cs, cancel)
}

// endsWithToken reports whether a call to backend ends when its token is revoked: every
// call but auth's unary ones, which may revoke the token they carry themselves.
func endsWithToken(backend string, streaming bool) bool {
	return streaming || backend != routes.Auth
}

// forwardOne serves a method whose client sends one message (unary and server streaming):
// forward it, half-close, relay the answers — in the handler's goroutine, with none of the
// pump's goroutines and channels.
func forwardOne(ss grpc.ServerStream, cs grpc.ClientStream) error {
	f := &frame{}
	if err := ss.RecvMsg(f); err != nil {
		if errors.Is(err, io.EOF) {
			// Why InvalidArgument: the client ended its side without the request message
			// the method takes (a Connect body the transcoder could not decode ends so).
			return status.Error(codes.InvalidArgument, "the call ended before its request message")
		}
		return err
	}
	if err := cs.SendMsg(f); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	// io.EOF from SendMsg means the backend already ended the call; its status follows.
	_ = cs.CloseSend()
	err := backendToClient(ss, cs)
	ss.SetTrailer(responseHeaders(cs.Trailer()))
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// pump copies messages both ways until the backend finishes the call, then returns the
// backend's status (with its trailers) as the call's own.
func (p *Proxy) pump(ss grpc.ServerStream, cs grpc.ClientStream, cancel context.CancelFunc) error {
	upErr := make(chan error, 1)
	go func() { upErr <- p.clientToBackend(ss, cs) }()
	downErr := make(chan error, 1)
	go func() { downErr <- backendToClient(ss, cs) }()
	for {
		select {
		case err := <-upErr:
			if err != nil {
				// The client went away or sent something unreadable: end the backend call.
				cancel()
				<-downErr
				return err
			}
			upErr = nil // client finished sending; keep relaying the backend's answers
		case err := <-downErr:
			ss.SetTrailer(responseHeaders(cs.Trailer()))
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func (p *Proxy) clientToBackend(ss grpc.ServerStream, cs grpc.ClientStream) error {
	for {
		f := &frame{}
		if err := ss.RecvMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				_ = cs.CloseSend()
				return nil
			}
			return err
		}
		if err := cs.SendMsg(f); err != nil {
			// The backend ended the call; its status comes from RecvMsg on the other side.
			return nil
		}
	}
}

// backendToClient relays the backend's header, then its messages; it returns io.EOF when the
// backend finished with OK, else the backend's status error.
func backendToClient(ss grpc.ServerStream, cs grpc.ClientStream) error {
	for i := 0; ; i++ {
		f := &frame{}
		err := cs.RecvMsg(f)
		if i == 0 {
			// Headers arrive before the first message, or with the trailers of a call that
			// ended without one; Header blocks until then.
			if md, herr := cs.Header(); herr == nil {
				if h := responseHeaders(md); len(h) > 0 {
					if serr := ss.SendHeader(h); serr != nil {
						return serr
					}
				}
			}
		}
		if err != nil {
			return err
		}
		if err := ss.SendMsg(f); err != nil {
			return err
		}
	}
}

// deadlineWithin reports whether ctx already ends within d (most clients set a deadline of
// their own), so that a timer of the gateway's would never fire.
func deadlineWithin(ctx context.Context, d time.Duration) bool {
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) <= d
}

// unaryTimeout is the deadline of a unary call to backend: the configured one, else the
// route table's, which the generated Envoy configurations use too.
func (p *Proxy) unaryTimeout(backend string) time.Duration {
	if p.o.UnaryTimeout > 0 {
		return p.o.UnaryTimeout
	}
	return routes.UnaryTimeout(backend)
}
