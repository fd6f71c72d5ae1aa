// Package provider defines the machine providers vagrant-runner drives targets through: a
// provider brings a machine up, halts it, destroys it, reports its state and runs commands in
// it. Implementations live in subpackages (netns).
package provider

import (
	"context"
	"errors"
	"io"
)

// Vagrant's machine state ids (sdk.Args.Target.Machine.State.id) that providers report.
const (
	StateRunning    = "running"
	StatePoweroff   = "poweroff"
	StateNotCreated = "not_created"
)

// State is a machine's state in Vagrant's terms (hashicorp.vagrant.sdk.Args.Target.Machine.State).
type State struct {
	// ID is one of the State* constants.
	ID string
	// Short is a word or two for listings ("running").
	Short string
	// Long is a sentence for humans, e.g. where the machine can be reached.
	Long string
}

// Command is a process to run inside a machine.
type Command struct {
	// Args is the program and its arguments; Args[0] is looked up on the machine's PATH.
	Args []string
	// Env is the process environment ("KEY=value"). The runner's own environment is never
	// passed on: it holds the runner's login token.
	Env []string
	// Stdout and Stderr receive the process output as it is written.
	Stdout, Stderr io.Writer
}

// Provider drives the machines of one kind. Machines are named by an id the runner derives
// from the target (lower-case letters and digits; see ValidID of each provider). Up, Halt and
// Destroy are idempotent: Up on a running machine, Halt on a halted or missing one and Destroy
// on a missing one succeed and change nothing, so a job retried after a runner crash finishes
// what the first attempt started.
type Provider interface {
	// Name is the provider's name as jobs and targets spell it ("netns").
	Name() string
	// ValidID reports why id cannot name a machine of this provider, or nil.
	ValidID(id string) error
	// Up creates the machine when it does not exist and starts it.
	Up(ctx context.Context, id string) error
	// Halt stops the machine (every process in it) and keeps it, so Up restarts it as it was.
	Halt(ctx context.Context, id string) error
	// Destroy stops and removes the machine and everything the provider created for it.
	Destroy(ctx context.Context, id string) error
	// Status reports the machine's state; a machine that does not exist is StateNotCreated.
	Status(ctx context.Context, id string) (State, error)
	// Exec runs cmd in the running machine and returns its exit status (128+N when killed
	// by signal N). It fails with ErrNotRunning when the machine is not running. When ctx is
	// canceled the process group gets SIGTERM and, after a grace period, SIGKILL; with the
	// cancel cause ErrKilled it gets SIGKILL at once.
	Exec(ctx context.Context, id string, cmd Command) (exitCode int, err error)
}

// Checker is implemented by providers that can check their prerequisites on this host (the
// Auth operation's check).
type Checker interface {
	// Check returns nil when the provider can work here, else what is missing.
	Check(ctx context.Context) error
}

// Documented is implemented by providers that describe themselves (the Docs operation).
type Documented interface {
	Docs() Docs
}

// Docs describes a provider for the Docs operation.
type Docs struct {
	Description string
	Example     string
	Fields      []Field
}

// Field is one setting of a provider.
type Field struct {
	Name, Synopsis, Summary, EnvVar, Type, Default string
}

var (
	// ErrNotRunning: the machine exists but is halted, or does not exist; run up first.
	ErrNotRunning = errors.New("machine is not running: run `up` first")
	// ErrKilled is the context cancel cause that asks a provider to stop at once (a forced
	// job cancel) instead of terminating processes gracefully.
	ErrKilled = errors.New("job force-canceled")
)
