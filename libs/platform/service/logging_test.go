package service

import (
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// TestCallLogVolume: at the default INFO level a successful call writes no line, a failed
// or slow one does, and LogCalls "all" restores a line per call. Reports bytes per call.
func TestCallLogVolume(t *testing.T) {
	tests := []struct {
		name      string
		o         server.Options
		method    string
		wantLines bool
	}{
		{"success is quiet", server.Options{}, "Public", false},
		{"failure is logged", server.Options{}, "Panic", true},
		{"slow success is logged", server.Options{SlowCall: time.Nanosecond}, "Public", true},
		{"all calls", server.Options{LogCalls: server.LogAllCalls}, "Public", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &testenv.SyncBuffer{}
			log, err := telemetry.NewLogger(logs, "json", "info")
			if err != nil {
				t.Fatal(err)
			}
			tt.o.Logger = log
			h := start(t, opts{Options: tt.o})
			const calls = 20
			for range calls {
				_, _ = h.call(testCtx(t), tt.method, "x")
			}
			finished := strings.Count(logs.String(), `"msg":"finished call"`)
			if tt.wantLines && finished != calls {
				t.Errorf("%d finished-call lines for %d calls, want one each", finished, calls)
			}
			if !tt.wantLines && finished != 0 {
				t.Errorf("%d finished-call lines for successful fast calls at INFO, want none", finished)
			}
			t.Logf("%s: %d bytes of log per call", tt.name, len(logs.String())/calls)
		})
	}
}

func TestServerRejectsUnknownLogCalls(t *testing.T) {
	_, err := server.New(server.Options{Name: "t", GRPCAddr: "127.0.0.1:0", LogCalls: "some"})
	if err == nil {
		t.Fatal("LogCalls \"some\" accepted")
	}
}
