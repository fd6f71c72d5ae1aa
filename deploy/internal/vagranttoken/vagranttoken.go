// Package vagranttoken gets vagrant-server's tokens the way services/vagrant-server/README.md
// tells an operator to: BootstrapToken once on a fresh server (only the first caller gets
// that token), then GenerateLoginToken with it for every other client. make up gives its
// runner the first; make kube-up gives the runner and kaas one each.
package vagranttoken

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	vagrantpb "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// ErrBootstrapped says the server gave its first token out before: a login token made with
// a token someone keeps is the way now.
var ErrBootstrapped = errors.New("vagrant-server was bootstrapped before")

// Bootstrap asks the server behind conn for its first login token.
func Bootstrap(ctx context.Context, conn grpc.ClientConnInterface) (string, error) {
	resp, err := vagrantpb.NewVagrantClient(conn).BootstrapToken(call(ctx, ""), &emptypb.Empty{})
	if status.Code(err) == codes.PermissionDenied {
		return "", ErrBootstrapped
	}
	if err != nil {
		return "", err
	}
	return resp.GetToken(), nil
}

// Login makes a new login token with token.
func Login(ctx context.Context, conn grpc.ClientConnInterface, token string) (string, error) {
	resp, err := vagrantpb.NewVagrantClient(conn).GenerateLoginToken(call(ctx, token), &emptypb.Empty{})
	if err != nil {
		return "", err
	}
	return resp.GetToken(), nil
}

// call carries what every Vagrant client sends: the API protocol range and its token.
func call(ctx context.Context, token string) context.Context {
	md := metadata.Pairs("client-api-protocol", "1,1")
	if token != "" {
		md.Set("authorization", token)
	}
	return metadata.NewOutgoingContext(ctx, md)
}
