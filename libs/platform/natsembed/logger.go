package natsembed

import (
	"context"
	"fmt"
	"log/slog"
)

// slogAdapter forwards the NATS server's printf-style log to slog.
type slogAdapter struct {
	log *slog.Logger
}

func (a slogAdapter) emit(level slog.Level, format string, v []any) {
	ctx := context.Background()
	if !a.log.Enabled(ctx, level) {
		return
	}
	a.log.Log(ctx, level, fmt.Sprintf(format, v...), "component", "nats-server")
}

// Noticef logs at info level.
func (a slogAdapter) Noticef(format string, v ...any) { a.emit(slog.LevelInfo, format, v) }

// Warnf logs at warn level.
func (a slogAdapter) Warnf(format string, v ...any) { a.emit(slog.LevelWarn, format, v) }

// Fatalf logs at error level; the server shuts itself down after a fatal error, and
// exiting the embedding process is not ours to decide.
func (a slogAdapter) Fatalf(format string, v ...any) { a.emit(slog.LevelError, format, v) }

// Errorf logs at error level.
func (a slogAdapter) Errorf(format string, v ...any) { a.emit(slog.LevelError, format, v) }

// Debugf logs at debug level.
func (a slogAdapter) Debugf(format string, v ...any) { a.emit(slog.LevelDebug, format, v) }

// Tracef logs protocol traces at a level below debug.
func (a slogAdapter) Tracef(format string, v ...any) { a.emit(slog.LevelDebug-4, format, v) }
