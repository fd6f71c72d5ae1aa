// Package grpc serves hashicorp.vagrant.Vagrant: one file per resource, each RPC validated,
// passed to the registry or token rules, and its error mapped in errors.go. guard.go is the
// protocol-version and token check every call passes first.
package grpc

import (
	"context"
	"log/slog"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// Protocol versions this server speaks, as upstream advertises them
// (internal/protocolversion/current.go): API 1..1 and entrypoint 1..1.
var (
	apiProtocol        = &vagrant.VersionInfo_ProtocolVersion{Minimum: 1, Current: 1}
	entrypointProtocol = &vagrant.VersionInfo_ProtocolVersion{Minimum: 1, Current: 1}
)

// Server implements hashicorp.vagrant.Vagrant.
type Server struct {
	vagrant.UnimplementedVagrantServer
	registry *registry.Service
	tokens   *tokens.Issuer
	log      *slog.Logger
	version  string
}

// Options configure a Server.
type Options struct {
	Registry *registry.Service
	Tokens   *tokens.Issuer
	Logger   *slog.Logger
	// Version is reported by GetVersionInfo (semver; empty hides it, which upstream allows).
	Version string
}

// NewServer returns the Vagrant API over the registry and the token issuer.
func NewServer(o Options) *Server {
	return &Server{registry: o.Registry, tokens: o.Tokens, log: o.Logger, version: o.Version}
}

// GetVersionInfo reports the protocol ranges clients negotiate against. It needs neither a
// token nor the client-api-protocol header: clients call it to decide whether they can talk.
func (s *Server) GetVersionInfo(context.Context, *emptypb.Empty) (*vagrant.GetVersionInfoResponse, error) {
	return &vagrant.GetVersionInfoResponse{Info: &vagrant.VersionInfo{
		Api:        &vagrant.VersionInfo_ProtocolVersion{Minimum: apiProtocol.Minimum, Current: apiProtocol.Current},
		Entrypoint: &vagrant.VersionInfo_ProtocolVersion{Minimum: entrypointProtocol.Minimum, Current: entrypointProtocol.Current},
		Version:    s.version,
	}}, nil
}
