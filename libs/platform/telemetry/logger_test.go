package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// secretValuer hides a secret behind slog.LogValuer, which the redactor must resolve.
type secretValuer struct{}

func (secretValuer) LogValue() slog.Value {
	return slog.GroupValue(slog.String("user", "alice"), slog.String("password", "valuer-hunter2"))
}

func TestLoggerRedactsSecrets(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			log, err := NewLogger(&buf, format, "debug")
			if err != nil {
				t.Fatal(err)
			}
			log = log.With("token", "with-hunter2", slog.Group("creds", "user", "bob"))
			log.Info("login postgres://app:msg-hunter2@db/p",
				"password", "pw-hunter2",
				"Authorization", "Bearer auth-hunter2",
				"s3.secret_access_key", "s3-hunter2",
				"api_key", 12345,
				"dsn", "postgres://app:url-hunter2@db:5432/plinth",
				"error", errors.New("connect nats://u:err-hunter2@n:4222: refused"),
				"login", secretValuer{},
				slog.Group("request", "user", "carol", "refresh_token", "grp-hunter2"),
				"user", "dave",
			)
			out := buf.String()
			if strings.Contains(out, "hunter2") || strings.Contains(out, "12345") {
				t.Fatalf("log leaks a secret:\n%s", out)
			}
			for _, want := range []string{
				"[REDACTED]", "postgres://app:xxxxx@db:5432/plinth", "nats://u:xxxxx@n:4222",
				"postgres://app:xxxxx@db/p", "alice", "carol", "dave",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("log does not contain %q:\n%s", want, out)
				}
			}
			// The group keyed "creds" is secret-like as a whole and must not show its content.
			if strings.Contains(out, "bob") {
				t.Errorf("group under a secret key was not redacted:\n%s", out)
			}
		})
	}
}

func TestLoggerAddsTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLogger(&buf, "json", "info")
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)

	log.InfoContext(ctx, "with span", "k", "v")
	log.InfoContext(context.Background(), "without span")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), buf.String())
	}
	var withSpan, without map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &withSpan); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &without); err != nil {
		t.Fatal(err)
	}
	if withSpan["trace_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" || withSpan["span_id"] != "00f067aa0ba902b7" {
		t.Errorf("trace ids missing or wrong: %v", withSpan)
	}
	if withSpan["k"] != "v" {
		t.Errorf("original attributes lost: %v", withSpan)
	}
	if _, ok := without["trace_id"]; ok {
		t.Errorf("trace_id added without a span: %v", without)
	}
}

func TestLoggerFormatAndLevel(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLogger(&buf, "text", "warn")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("quiet")
	log.Warn("loud", "n", 1)
	if out := buf.String(); strings.Contains(out, "quiet") || !strings.Contains(out, "level=WARN msg=loud n=1") {
		t.Errorf("text/warn logger wrote:\n%s", out)
	}

	buf.Reset()
	log, err = NewLogger(&buf, "auto", "")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("auto")
	if !json.Valid(buf.Bytes()) {
		t.Errorf("auto format on a non-terminal should be JSON, got %q", buf.String())
	}

	for _, bad := range [][2]string{{"xml", "info"}, {"json", "loud"}} {
		if _, err := NewLogger(&buf, bad[0], bad[1]); err == nil {
			t.Errorf("NewLogger(%q, %q) succeeded, want error", bad[0], bad[1])
		}
	}
}
