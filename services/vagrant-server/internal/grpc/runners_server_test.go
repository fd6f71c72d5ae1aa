package grpc

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	vagrantv1 "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
)

// Plinth's services here are authenticated only by PlinthAuth: never by a vagrant token, and
// not at all (PermissionDenied) when the server was built without it.
func TestPlinthServicesNeedPlinthAuth(t *testing.T) {
	method := vagrantv1.RunnerService_ListRunners_FullMethodName
	log := slog.New(slog.DiscardHandler)
	_, err := NewServer(Options{Logger: log}).Authenticate(context.Background(), method)
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("without PlinthAuth: %v; want PermissionDenied", err)
	}
	var asked []string
	refuse := status.Error(codes.Unauthenticated, "invalid token")
	s := NewServer(Options{Logger: log, PlinthAuth: func(ctx context.Context, m string) (context.Context, error) {
		asked = append(asked, m)
		return nil, refuse
	}})
	if _, err := s.Authenticate(context.Background(), method); !errors.Is(err, refuse) {
		t.Fatalf("PlinthAuth's refusal came back as %v", err)
	}
	if len(asked) != 1 || asked[0] != method {
		t.Fatalf("PlinthAuth asked about %v; want [%s]", asked, method)
	}
}
