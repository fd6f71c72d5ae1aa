package service

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

func TestMetricsAfterCall(t *testing.T) {
	h := start(t, opts{})
	if _, err := h.call(testCtx(t), "Echo", "x"); err != nil {
		t.Fatal(err)
	}
	code, body := h.get(t, "/metrics")
	if code != 200 {
		t.Fatalf("/metrics = %d", code)
	}
	handled := regexp.MustCompile(`(?m)^grpc_server_handled_total\{[^}]*grpc_code="OK",grpc_method="Echo",grpc_service="plinth.test.v1.Echo",grpc_type="unary"\} 1$`)
	if !handled.MatchString(body) {
		t.Errorf("/metrics lacks grpc_server_handled_total for Echo:\n%s", grep(body, "grpc_server_handled_total"))
	}
	for _, want := range []string{
		`grpc_server_handling_seconds_bucket{grpc_method="Echo"`,
		`grpc_server_started_total{grpc_method="Slow"`, // initialized to zero before any call
		"go_goroutines ",
		"process_open_fds ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// Services add their own metrics to the same registry.
	if h.svc.Metrics() == nil {
		t.Error("Metrics() returned nil")
	}
}

func TestReadiness(t *testing.T) {
	h := start(t, opts{})
	var dbDown atomic.Bool
	var dbCalls atomic.Int32
	dbDown.Store(true)
	h.svc.Ready("postgres", func(ctx context.Context) error {
		dbCalls.Add(1)
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("check ran without a deadline")
		}
		if dbDown.Load() {
			return errors.New("db down")
		}
		return nil
	})
	h.svc.Ready("nats", func(context.Context) error { return nil })

	code, body := h.get(t, "/readyz")
	if code != 503 || !strings.Contains(body, "postgres") || strings.Contains(body, "nats") {
		t.Errorf("/readyz with failing postgres = %d %q; want 503 naming only postgres", code, body)
	}
	if strings.Contains(body, "db down") {
		t.Errorf("/readyz exposes the check's error text: %q", body)
	}
	if !strings.Contains(h.logs.String(), "db down") {
		t.Error("the failing check's cause was not logged")
	}

	dbDown.Store(false)
	if code, body := h.get(t, "/readyz"); code != 200 || strings.TrimSpace(body) != "ok" {
		t.Errorf("/readyz with passing checks = %d %q", code, body)
	}
	if code, _ := h.get(t, "/healthz"); code != 200 {
		t.Errorf("/healthz = %d", code)
	}
	if n := dbCalls.Load(); n != 2 {
		t.Errorf("postgres check ran %d times, want once per probe", n)
	}
}

func TestAdminOff(t *testing.T) {
	h := start(t, opts{AdminAddr: "off"})
	if got := h.svc.AdminAddr(); got != "" {
		t.Errorf("AdminAddr with admin off = %q", got)
	}
	if _, err := h.call(testCtx(t), "Echo", "x"); err != nil {
		t.Fatal(err)
	}
}

func grep(body, prefix string) string {
	var out []string
	for line := range strings.SplitSeq(body, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
