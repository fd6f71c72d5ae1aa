package grpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
)

func TestToStatus(t *testing.T) {
	cases := []struct {
		err  error
		code codes.Code
	}{
		{input.Invalid("name", "bad"), codes.InvalidArgument},
		{fmt.Errorf("wrapped: %w", input.Invalid("name", "bad")), codes.InvalidArgument},
		{cluster.NotFound("x"), codes.NotFound},
		{&cluster.NotFoundError{What: "node pool"}, codes.NotFound},
		{cluster.ClusterExists("x"), codes.AlreadyExists},
		{&cluster.ConflictError{Reason: "being deleted"}, codes.FailedPrecondition},
		{&cluster.UnmetError{Reason: "/usr/bin/etcd is missing"}, codes.FailedPrecondition},
		{&cluster.QuotaError{Owner: cluster.Owner{ID: "u", Name: "alice"}, What: "clusters", Have: 10, Limit: 10, Adding: 1,
			Setting: cluster.ClustersQuotaSetting}, codes.ResourceExhausted},
		{context.DeadlineExceeded, codes.DeadlineExceeded},
		{&pgconn.ConnectError{}, codes.Unavailable},
		{errors.New("disk on fire"), codes.Internal},
	}
	for _, tc := range cases {
		got := toStatus(context.Background(), slog.New(slog.DiscardHandler), tc.err)
		if status.Code(got) != tc.code {
			t.Errorf("%v → %v, want %v", tc.err, got, tc.code)
		}
		if tc.code == codes.Internal && status.Convert(got).Message() != "internal error" {
			t.Errorf("an internal error's cause reached the client: %v", got)
		}
	}
}
