// Package operation executes the operations of vagrant-server jobs on a runner: noop,
// validate, init, init_basis, init_project, auth, docs, and command — Vagrant's machine
// commands (up, halt, destroy, status, reload, ssh -c, exec) driven through machine providers,
// with the machine's state reported back to the server on its target.
//
// Execute returns a gRPC status error when the job cannot run as asked (the runner sends it as
// the job's Error). A command that ran but failed — a provider error, a non-zero exit — is a
// result: Complete with CommandResult.run_result false, run_error and exit_code, as Vagrant's
// own runner reports it.
package operation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
)

// Server is the part of the Vagrant API operations call back into: the registry lookups of
// init and validate, and the target updates that report machine state.
type Server interface {
	FindBasis(ctx context.Context, in *vagrant.FindBasisRequest, opts ...grpc.CallOption) (*vagrant.FindBasisResponse, error)
	UpsertBasis(ctx context.Context, in *vagrant.UpsertBasisRequest, opts ...grpc.CallOption) (*vagrant.UpsertBasisResponse, error)
	FindProject(ctx context.Context, in *vagrant.FindProjectRequest, opts ...grpc.CallOption) (*vagrant.FindProjectResponse, error)
	UpsertProject(ctx context.Context, in *vagrant.UpsertProjectRequest, opts ...grpc.CallOption) (*vagrant.UpsertProjectResponse, error)
	FindTarget(ctx context.Context, in *vagrant.FindTargetRequest, opts ...grpc.CallOption) (*vagrant.FindTargetResponse, error)
	UpsertTarget(ctx context.Context, in *vagrant.UpsertTargetRequest, opts ...grpc.CallOption) (*vagrant.UpsertTargetResponse, error)
}

// Output receives a job's terminal events in order. Operations call Event from several
// goroutines (a command's stdout and stderr), so implementations must be safe for that.
type Output interface {
	Event(*vagrant.GetJobStreamResponse_Terminal_Event)
}

// Options configure an Executor.
type Options struct {
	// Providers are the machine providers this runner has.
	Providers *provider.Set
	// DefaultProvider drives targets that name no provider; it must be in Providers.
	DefaultProvider string
	// Server is the vagrant-server client.
	Server Server
}

// Executor executes jobs' operations.
type Executor struct {
	providers       *provider.Set
	defaultProvider string
	server          Server
	uid             string // Target.Machine.uid: who created the machine
}

// New returns an Executor.
func New(o Options) (*Executor, error) {
	if o.Providers == nil || o.Server == nil {
		return nil, errors.New("operation: Providers and Server are required")
	}
	if _, ok := o.Providers.Get(o.DefaultProvider); !ok {
		return nil, fmt.Errorf("default provider %q is not one of %v", o.DefaultProvider, o.Providers.Names())
	}
	return &Executor{providers: o.Providers, defaultProvider: o.DefaultProvider, server: o.Server,
		uid: strconv.Itoa(os.Getuid())}, nil
}

// Execute runs job's operation, writing its output to out. env is the environment commands in
// machines get (the runner's config variables). A canceled ctx ends the operation with the
// cancel cause.
func (e *Executor) Execute(ctx context.Context, job *vagrant.Job, env []string, out Output) (*vagrant.Job_Result, error) {
	if ds := job.GetDataSource(); ds.GetGit() != nil {
		return nil, status.Error(codes.Unimplemented,
			"git data sources are not supported by vagrant-runner: queue the job with a local data source (or none)")
	}
	switch op := job.GetOperation().(type) {
	case *vagrant.Job_Noop_:
		say(out, "noop: nothing to do")
		return &vagrant.Job_Result{}, nil
	case *vagrant.Job_Validate:
		return e.validate(ctx, job, out)
	case *vagrant.Job_Init:
		return e.init(out), nil
	case *vagrant.Job_InitBasis:
		return e.initBasis(ctx, job, out)
	case *vagrant.Job_InitProject:
		return e.initProject(ctx, job, out)
	case *vagrant.Job_Auth:
		return e.auth(ctx, op.Auth, out)
	case *vagrant.Job_Docs:
		return e.docs(out), nil
	case *vagrant.Job_Command:
		return e.command(ctx, job, op.Command, env, out)
	case nil:
		return nil, status.Error(codes.InvalidArgument, "job has no operation")
	default:
		return nil, status.Errorf(codes.Unimplemented, "vagrant-runner cannot execute %T operations", op)
	}
}

// Components lists what the runner registers: a COMMAND component per command it runs and a
// PROVIDER component per provider, so the server assigns it only jobs it can do.
func (e *Executor) Components() []*vagrant.Component {
	var cs []*vagrant.Component
	for _, c := range commands() {
		cs = append(cs, &vagrant.Component{Type: vagrant.Component_COMMAND, Name: c.info.Name})
	}
	for _, name := range e.providers.Names() {
		cs = append(cs, &vagrant.Component{Type: vagrant.Component_PROVIDER, Name: name})
	}
	return cs
}

// Name is the job's operation as the proto spells it ("noop", "command", ...), for logs and
// metrics.
func Name(job *vagrant.Job) string {
	switch job.GetOperation().(type) {
	case *vagrant.Job_Noop_:
		return "noop"
	case *vagrant.Job_Validate:
		return "validate"
	case *vagrant.Job_Init:
		return "init"
	case *vagrant.Job_InitBasis:
		return "init_basis"
	case *vagrant.Job_InitProject:
		return "init_project"
	case *vagrant.Job_Auth:
		return "auth"
	case *vagrant.Job_Docs:
		return "docs"
	case *vagrant.Job_Command:
		return "command"
	case nil:
		return "none"
	}
	return "unknown"
}

// ReadOnly reports whether the job's operation only reads — noop, validate, init, auth and
// docs — so that running it a second time changes nothing. Commands drive machines and
// init_basis/init_project register resources.
func ReadOnly(job *vagrant.Job) bool {
	switch job.GetOperation().(type) {
	case *vagrant.Job_Noop_, *vagrant.Job_Validate, *vagrant.Job_Init, *vagrant.Job_Auth, *vagrant.Job_Docs:
		return true
	}
	return false
}
