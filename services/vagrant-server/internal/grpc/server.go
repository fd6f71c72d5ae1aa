// Package grpc serves hashicorp.vagrant.Vagrant: one file per resource, each RPC validated,
// passed to the registry, token or job queue rules, and its error mapped in errors.go.
// guard.go is the protocol-version and token check every call passes first. The streams
// (runner_*.go, service_jobstream.go, service_logs.go) compose the job queue with the
// durable job output (package joboutput).
package grpc

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/joboutput"
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
	jobs     JobQueue
	output   joboutput.Store
	notices  *joboutput.Listener
	log      *slog.Logger
	version  string
	lifetime context.Context
	jobsKept int
	poll     time.Duration
	acks     *pendingAcks

	plinthAuth func(ctx context.Context, fullMethod string) (context.Context, error)
	calls      *authn.Lifetimes
}

// Options configure a Server. Every field but Version, Lifetime, JobsKept and OutputPoll is
// required.
type Options struct {
	Registry *registry.Service
	Tokens   *tokens.Issuer
	// Jobs is the job queue; Output and OutputNotices are where job output is kept and how
	// its readers learn of new output.
	Jobs          JobQueue
	Output        joboutput.Store
	OutputNotices *joboutput.Listener
	Logger        *slog.Logger
	// Version is reported by GetVersionInfo (semver; empty hides it, which upstream allows).
	Version string
	// Lifetime ends when the server starts shutting down: long-lived streams (runners
	// waiting for work, job and log streams) then end with Unavailable, so a graceful stop
	// does not wait for them. A runner's stream with a running job is the exception: it may
	// still finish the job within the shutdown timeout. Nil: never.
	Lifetime context.Context
	// JobsKept is how many finished jobs PruneOldJobs keeps (the newest); 0 means 50, as
	// upstream.
	JobsKept int
	// OutputPoll is how often job and log streams look for new output without a
	// notification (the fallback should one be lost); 0 means 2s.
	OutputPoll time.Duration
	// PlinthAuth authenticates calls to Plinth's own services here with a Plinth bearer
	// token (authn.Verifier.Authenticate); nil leaves them unserved (PermissionDenied).
	PlinthAuth func(ctx context.Context, fullMethod string) (context.Context, error)
	// Calls are the calls running on tokens something revokes, by tokens.Caller.LifetimeKey:
	// ending one (Calls.End, when auth revokes a Plinth token or a user's access) ends its
	// calls Unauthenticated. Nil: a Lifetimes of the server's own.
	Calls *authn.Lifetimes
}

// DefaultJobsKept is upstream's number of finished jobs PruneOldJobs keeps.
const DefaultJobsKept = 50

// NewServer returns the Vagrant API over the registry, the token issuer and the job queue.
func NewServer(o Options) *Server {
	if o.Lifetime == nil {
		o.Lifetime = context.Background()
	}
	if o.JobsKept <= 0 {
		o.JobsKept = DefaultJobsKept
	}
	if o.OutputPoll <= 0 {
		o.OutputPoll = 2 * time.Second
	}
	if o.Calls == nil {
		o.Calls = &authn.Lifetimes{}
	}
	return &Server{registry: o.Registry, tokens: o.Tokens, jobs: o.Jobs, output: o.Output, notices: o.OutputNotices,
		log: o.Logger, version: o.Version, lifetime: o.Lifetime, jobsKept: o.JobsKept, poll: o.OutputPoll,
		acks: newPendingAcks(), plinthAuth: o.PlinthAuth, calls: o.Calls}
}

// untilStopping returns ctx that also ends when the server starts shutting down.
func (s *Server) untilStopping(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.lifetime, cancel)
	return ctx, func() { stop(); cancel() }
}

// stopped maps the end of a stream's context to its status: errStopping when the server is
// shutting down, else the caller's cancellation.
func (s *Server) stopped(ctx context.Context) error {
	if s.lifetime.Err() != nil {
		return toStatus(ctx, s.log, errStopping, "doing", "end the stream")
	}
	return toStatus(ctx, s.log, ctx.Err(), "doing", "end the stream")
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
