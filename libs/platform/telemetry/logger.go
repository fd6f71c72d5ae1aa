package telemetry

import (
	"fmt"
	"io"
	"log/slog"
	"os"
)

// NewLogger returns a slog logger writing to w in format "json", "text" or "auto" (text when
// w is a terminal, else json) at level "debug", "info", "warn" or "error" (empty: info).
// Every record passes through redaction (secret-like keys are written as "[REDACTED]", URL
// and DSN passwords are masked) and carries trace_id/span_id when its context has a span.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if level != "" {
		if err := lvl.UnmarshalText([]byte(level)); err != nil {
			return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
		}
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "" || format == "auto" {
		format = "json"
		if isTerminal(w) {
			format = "text"
		}
	}
	var base slog.Handler
	switch format {
	case "json":
		base = slog.NewJSONHandler(w, opts)
	case "text":
		base = slog.NewTextHandler(w, opts)
	default:
		return nil, fmt.Errorf("log format %q: want json, text or auto", format)
	}
	return slog.New(traceHandler{next: redactHandler{next: base}}), nil
}

// isTerminal reports whether w is a character device such as a TTY. It avoids a dependency
// on x/term; a false positive (e.g. /dev/null) only changes the log format.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
