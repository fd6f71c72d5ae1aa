package grpcerr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

func TestUnexpected(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"input error passes", fmt.Errorf("wrapped: %w", input.Invalid("name", "is required")), codes.InvalidArgument},
		{"status passes", status.Error(codes.NotFound, "basis not found"), codes.NotFound},
		{"canceled", fmt.Errorf("query: %w", context.Canceled), codes.Canceled},
		{"deadline", context.DeadlineExceeded, codes.DeadlineExceeded},
		{"database down", &pgconn.ConnectError{}, codes.Unavailable},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, codes.Unavailable},
		{"connection exception", &pgconn.PgError{Code: "08006"}, codes.Unavailable},
		{"unique violation", &pgconn.PgError{Code: "23505"}, codes.Internal},
		{"nul byte", &pgconn.PgError{Code: "22021"}, codes.Internal},
		{"nats gone", fmt.Errorf("publish: %w", nats.ErrNoServers), codes.Unavailable},
		{"refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), codes.Unavailable},
		{"bug", errors.New("SELECT secret FROM /var/lib/x"), codes.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &testenv.SyncBuffer{}
			got := Unexpected(context.Background(), slog.New(slog.NewJSONHandler(logs, nil)), tt.err, "basis", "b1")
			if status.Code(got) != tt.want {
				t.Errorf("code = %v, want %v", status.Code(got), tt.want)
			}
			if tt.want == codes.Internal {
				if msg := status.Convert(got).Message(); msg != "internal error" {
					t.Errorf("Internal message leaks the cause: %q", msg)
				}
				if !strings.Contains(logs.String(), `"basis":"b1"`) {
					t.Errorf("the log does not say what the handler was doing: %s", logs)
				}
			}
		})
	}
}
