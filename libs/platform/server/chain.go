package server

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/telemetry"
)

// serverOptions assembles tracing and the interceptor chain, outermost first:
//
//	recovery  – a panic anywhere below (including the service's auth hook) becomes Internal
//	calls     – a client address with MaxCallsPerClient calls in progress is refused
//	            ResourceExhausted (peers.go): before logging and metrics, so a flood of
//	            refusals is counted once (plinth_grpc_calls_refused_total), never logged per call
//	logging   – one line per finished call: method, code, duration, trace id; never payloads
//	            or metadata
//	metrics   – grpc_server_handled_total and handling-time histogram, including calls the
//	            auth hook rejected, so brute force shows up on dashboards
//	decode    – a request the codec could not decode, or with a list or map over its bound
//	            (libs/platform/input/bounds), is refused with InvalidArgument (see
//	            requestCodec), before the auth hook and the handler
//	auth      – the service's AuthFunc, skipped for health, reflection and AuthExempt
//	recovery  – again, innermost, so a panicking handler is logged and counted as Internal
//	            by the layers above instead of vanishing from logs and metrics
func (s *Server) serverOptions(exempt map[string]bool) []grpc.ServerOption {
	rec := recovery.WithRecoveryHandlerContext(RecoverPanic(s.log))
	logger := logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		s.log.Log(ctx, s.callLevel(lvl, fields), msg, fields...)
	})
	logOpts := []logging.Option{logging.WithLogOnEvents(logging.FinishCall), logging.WithLevels(s.codeLevel)}
	// Health probes arrive every few seconds; logging them would drown everything else.
	notHealth := selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool {
		return c.Service != healthpb.Health_ServiceDesc.ServiceName
	})
	exemplar := grpcprom.WithExemplarFromContext(traceExemplar)

	unary := []grpc.UnaryServerInterceptor{
		recovery.UnaryServerInterceptor(rec),
		s.calls.Unary,
		selector.UnaryServerInterceptor(logging.UnaryServerInterceptor(logger, logOpts...), notHealth),
		s.metrics.UnaryServerInterceptor(exemplar),
		s.codec.unary,
	}
	stream := []grpc.StreamServerInterceptor{
		recovery.StreamServerInterceptor(rec),
		s.calls.Stream,
		selector.StreamServerInterceptor(logging.StreamServerInterceptor(logger, logOpts...), notHealth),
		s.metrics.StreamServerInterceptor(exemplar),
		s.codec.stream,
	}
	if auth := s.opts.Authenticate; auth != nil {
		m := authRequired(exempt)
		unary = append(unary, selector.UnaryServerInterceptor(auth.unary(s.log), m))
		stream = append(stream, selector.StreamServerInterceptor(auth.stream(s.log), m))
	}
	unary = append(unary, recovery.UnaryServerInterceptor(rec))
	stream = append(stream, recovery.StreamServerInterceptor(rec))

	tp := s.opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return []grpc.ServerOption{
		grpc.StatsHandler(otelgrpc.NewServerHandler(
			otelgrpc.WithTracerProvider(tp),
			otelgrpc.WithPropagators(telemetry.Propagator()),
			otelgrpc.WithFilter(filters.Not(filters.HealthCheck())),
		)),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
		grpc.MaxHeaderListSize(s.opts.MaxHeaderListSize),
		grpc.MaxConcurrentStreams(s.opts.MaxConcurrentStreams),
		grpc.ConnectionTimeout(s.opts.HandshakeTimeout),
		grpc.ForceServerCodecV2(s.codec),
	}
}

// codeLevel is CallLevel as the logging interceptor wants it.
func (s *Server) codeLevel(code codes.Code) logging.Level {
	return logging.Level(CallLevel(code, s.opts.LogCalls == LogAllCalls))
}

// CallLevel is the level of a finished call's log line by its code: successful calls at DEBUG
// (unless logAll), client errors at INFO (Unimplemented included), server errors at WARN or
// ERROR. The gateway's access log uses it too, so both log a call alike.
func CallLevel(code codes.Code, logAll bool) slog.Level {
	switch {
	case code == codes.OK && !logAll:
		return slog.LevelDebug
	case code == codes.Unimplemented:
		// The client called a method this server does not have (or an upstream method it
		// does not implement): the client's error, which anyone can cause at will, so not
		// an ERROR that pages an operator (go-grpc-middleware's default).
		return slog.LevelInfo
	}
	return slog.Level(logging.DefaultServerCodeToLevel(code))
}

// callLevel raises a successful call that took SlowCall or longer from DEBUG to INFO, so
// slow calls stay visible when successful ones are not logged.
func (s *Server) callLevel(lvl logging.Level, fields []any) slog.Level {
	if lvl != logging.LevelDebug {
		return slog.Level(lvl)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i] != "grpc.time_ms" {
			continue
		}
		ms, err := strconv.ParseFloat(fmt.Sprint(fields[i+1]), 64)
		if err == nil && time.Duration(ms*float64(time.Millisecond)) >= s.opts.SlowCall {
			return slog.LevelInfo
		}
	}
	return slog.LevelDebug
}

// RecoverPanic is the recovery handler of every gRPC server of the suite (the gateway's too):
// it logs the panic with its stack and the trace id, and gives the client only a generic
// Internal: the panic value may hold internal state or data of another caller.
func RecoverPanic(log *slog.Logger) recovery.RecoveryHandlerFuncContext {
	return func(ctx context.Context, p any) error {
		method, _ := grpc.Method(ctx)
		log.ErrorContext(ctx, "panic in gRPC handler",
			"grpc.method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		return status.Error(codes.Internal, "internal error")
	}
}

// traceExemplar links histogram samples to the trace that produced them.
func traceExemplar(ctx context.Context) prometheus.Labels {
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		return prometheus.Labels{"trace_id": sc.TraceID().String()}
	}
	return nil
}
