// Command benchtarget is the backend of bench/gateway.sh: hashicorp.vagrant.Vagrant's
// GetVersionInfo answered from memory (plus reflection, for ghz), so the benchmark measures
// what the gateway adds to a call and nothing else. It lives under bench/, not cmd/, so the
// launcher, which runs every services/*/cmd/*, never starts it.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/types/known/emptypb"

	vagrantpb "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

type versionServer struct {
	vagrantpb.UnimplementedVagrantServer
}

func (versionServer) GetVersionInfo(context.Context, *emptypb.Empty) (*vagrantpb.GetVersionInfoResponse, error) {
	return &vagrantpb.GetVersionInfoResponse{}, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtarget:", err)
		os.Exit(1)
	}
	s := grpc.NewServer()
	vagrantpb.RegisterVagrantServer(s, versionServer{})
	reflection.Register(s)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		s.Stop()
	}()
	fmt.Println(lis.Addr().String())
	if err := s.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, "benchtarget:", err)
		os.Exit(1)
	}
}
