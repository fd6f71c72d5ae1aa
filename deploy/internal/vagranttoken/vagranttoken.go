// Package vagranttoken gets vagrant-server's tokens the way services/vagrant-server/README.md
// tells an operator to: BootstrapToken once on a fresh server (only the first caller gets
// that token), then GenerateLoginToken with it for every other client, of the role that client
// needs. make up and make kube-up give the runner the first (an admin's) and kaas an
// operator's of its own.
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

// Operator is the role of a client that works the queue and the registry but makes no
// tokens: kaas's.
const Operator = "operator"

// roleHeader is vagrant-server's metadata asking for a new token's role (its tokens package's
// RoleHeader; upstream's request has no field for it).
const roleHeader = "plinth-vagrant-token-role"

// Login makes a new login token of role with token.
func Login(ctx context.Context, conn grpc.ClientConnInterface, token, role string) (string, error) {
	ctx = metadata.AppendToOutgoingContext(call(ctx, token), roleHeader, role)
	resp, err := vagrantpb.NewVagrantClient(conn).GenerateLoginToken(ctx, &emptypb.Empty{})
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
