package proxy

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/server"
)

// Call is what the access log and the metrics know of one proxied call.
type Call struct {
	Method string
	// Route is the matched route's path ("/pkg.Service/" or "/pkg.Service/Method"), "" when
	// none matched; Backend the route's backend.
	Route, Backend string
	Streaming      bool
}

// Log writes one access-log line and the metrics of every proxied call. Successful calls are
// logged at DEBUG unless they took SlowCall (unary calls only: a stream's length says nothing
// about the gateway), errors at libs/platform/server's levels (server.CallLevel), so a busy
// gateway does not write a line per call.
type Log struct {
	log      *slog.Logger
	slow     time.Duration
	all      bool
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewLog registers the gateway's call metrics on reg. logAll logs every call at INFO.
func NewLog(log *slog.Logger, reg prometheus.Registerer, slow time.Duration, logAll bool) (*Log, error) {
	if slow <= 0 {
		slow = server.DefaultSlowCall
	}
	l := &Log{
		log: log, slow: slow, all: logAll,
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_gateway_calls_total",
			Help: "Calls the gateway finished, by route (the route table's path), backend and gRPC code.",
		}, []string{"route", "backend", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "plinth_gateway_call_duration_seconds",
			Help:    "Duration of unary calls through the gateway (token check and backend included), by route and backend.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "backend"}),
	}
	for _, c := range []prometheus.Collector{l.calls, l.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Finish records a finished call.
func (l *Log) Finish(ctx context.Context, c Call, err error, d time.Duration) {
	if l == nil {
		return
	}
	code := status.Code(err)
	route := c.Route
	if route == "" {
		route = "unrouted" // bounded label: unknown paths are not metric names
	}
	l.calls.WithLabelValues(route, c.Backend, code.String()).Inc()
	if !c.Streaming && c.Route != "" {
		l.duration.WithLabelValues(route, c.Backend).Observe(d.Seconds())
	}
	level := l.level(code, d, c.Streaming)
	if !l.log.Enabled(ctx, level) {
		return
	}
	attrs := []any{
		"grpc.method", c.Method, "backend", c.Backend, "grpc.code", code.String(),
		"grpc.time_ms", float64(d.Microseconds()) / 1000, "streaming", c.Streaming,
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		attrs = append(attrs, "peer.address", p.Addr.String())
	}
	proto := ProtocolFrom(ctx)
	if proto == "" {
		proto = "grpc" // HTTP/2 connections reach the gRPC server directly
	}
	attrs = append(attrs, "protocol", proto)
	if err != nil {
		attrs = append(attrs, "grpc.error", status.Convert(err).Message())
	}
	l.log.Log(ctx, level, "finished call", attrs...)
}

// level is libs/platform/server's level of a call, a slow unary success raised to INFO.
func (l *Log) level(code codes.Code, d time.Duration, streaming bool) slog.Level {
	lvl := server.CallLevel(code, l.all)
	if lvl == slog.LevelDebug && !streaming && d >= l.slow {
		return slog.LevelInfo
	}
	return lvl
}

type protocolKey struct{}

// WithProtocol records the protocol the client spoke ("grpc", "grpc-web", "connect") in the
// request context, for the access log.
func WithProtocol(ctx context.Context, protocol string) context.Context {
	return context.WithValue(ctx, protocolKey{}, protocol)
}

// ProtocolFrom returns the protocol WithProtocol recorded.
func ProtocolFrom(ctx context.Context) string {
	p, _ := ctx.Value(protocolKey{}).(string)
	return p
}
