package app_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	vagrantpb "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/service/servicetest"
	"github.com/plinth-dev/plinth/services/gateway/internal/app"
)

type versionServer struct {
	vagrantpb.UnimplementedVagrantServer
}

func (versionServer) GetVersionInfo(context.Context, *emptypb.Empty) (*vagrantpb.GetVersionInfoResponse, error) {
	return &vagrantpb.GetVersionInfoResponse{}, nil
}

// BenchmarkUnary is one unary call (vagrant's GetVersionInfo, an Own route: no token check)
// made directly and through an in-process gateway, from parallel clients.
func BenchmarkUnary(b *testing.B) {
	gs := grpc.NewServer()
	vagrantpb.RegisterVagrantServer(gs, versionServer{})
	backend := serve(b, gs, "tcp", "127.0.0.1:0")

	cfg := app.Defaults()
	if err := config.Load(&cfg, nil, []string{"PLINTH_GRPC_ADDR=127.0.0.1:0", "PLINTH_ADMIN_ADDR=off",
		"PLINTH_GATEWAY_BACKEND_VAGRANT_SERVER=" + backend}); err != nil {
		b.Fatal(err)
	}
	g, err := app.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), app.Options{})
	if err != nil {
		b.Fatal(err)
	}
	servicetest.Run(b, g.Service)
	for name, addr := range map[string]string{"direct": backend, "gateway": g.Addr()} {
		b.Run(name, func(b *testing.B) {
			c := vagrantpb.NewVagrantClient(dial(b, addr))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.GetVersionInfo(context.Background(), &emptypb.Empty{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
