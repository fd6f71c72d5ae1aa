package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/plinth-dev/plinth/libs/platform/telemetry/redact"
)

// redactHandler rewrites every attribute before the wrapped handler sees it: values under
// secret-like keys become "[REDACTED]" and credentials inside strings and errors are masked.
// It wraps the handler rather than using HandlerOptions.ReplaceAttr because ReplaceAttr is
// never called for a group attribute itself, so a group keyed "credentials" would pass.
type redactHandler struct{ next slog.Handler }

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, redact.Text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = redactAttr(a)
	}
	return redactHandler{next: h.next.WithAttrs(clean)}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{next: h.next.WithGroup(name)}
}

func redactAttr(a slog.Attr) slog.Attr {
	if redact.IsSecretKey(a.Key) {
		return slog.String(a.Key, redact.Placeholder)
	}
	v := a.Value.Resolve() // a LogValuer could otherwise smuggle a secret past the checks
	switch v.Kind() {
	case slog.KindGroup:
		group := v.Group()
		clean := make([]slog.Attr, len(group))
		for i, g := range group {
			clean[i] = redactAttr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(clean...)}
	case slog.KindString:
		return slog.String(a.Key, redact.Text(v.String()))
	case slog.KindAny:
		// Only an error's text is rewritten, and only when it holds a credential, so that
		// handlers that treat errors specially still see the error otherwise.
		if err, ok := v.Any().(error); ok {
			if msg := err.Error(); redact.Text(msg) != msg {
				return slog.String(a.Key, redact.Text(msg))
			}
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// traceHandler adds trace_id and span_id of the span in the record's context, so every log
// line written with a *Context method (or by the gRPC logging interceptor) can be joined to
// its trace. Records logged through Logger.WithGroup carry the ids inside that group.
type traceHandler struct{ next slog.Handler }

func (h traceHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone() // the caller's record may share attribute storage; never append to it
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.next.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{next: h.next.WithAttrs(attrs)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{next: h.next.WithGroup(name)}
}
