// Package providertest has an in-memory machine provider for tests of the code that drives
// providers (operations, the runner). It models machine state only; commands run as a Go
// function the test supplies.
package providertest

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sync"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
)

var idRE = regexp.MustCompile(`^[a-z0-9]{1,13}$`)

// Fake is an in-memory provider. Its zero value is not usable; call New.
type Fake struct {
	name string
	// ExecFunc runs a command in a running machine; nil writes the args to stdout and exits 0.
	ExecFunc func(ctx context.Context, id string, cmd provider.Command) (int, error)
	// CheckErr is what Check returns.
	CheckErr error

	mu       sync.Mutex
	machines map[string]string // id → provider.State* id
	calls    []string
	execs    []provider.Command
}

// New returns a Fake provider called name.
func New(name string) *Fake { return &Fake{name: name, machines: map[string]string{}} }

// Name implements provider.Provider.
func (f *Fake) Name() string { return f.name }

// ValidID implements provider.Provider.
func (f *Fake) ValidID(id string) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("bad machine id %q", id)
	}
	return nil
}

func (f *Fake) record(call, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call+" "+id)
}

// Calls lists the calls made so far ("up abc", "exec abc", ...).
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Execs lists the commands run so far.
func (f *Fake) Execs() []provider.Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.execs)
}

func (f *Fake) set(id, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if state == provider.StateNotCreated {
		delete(f.machines, id)
		return
	}
	f.machines[id] = state
}

// Up implements provider.Provider.
func (f *Fake) Up(_ context.Context, id string) error {
	f.record("up", id)
	f.set(id, provider.StateRunning)
	return nil
}

// Halt implements provider.Provider.
func (f *Fake) Halt(_ context.Context, id string) error {
	f.record("halt", id)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.machines[id]; ok {
		f.machines[id] = provider.StatePoweroff
	}
	return nil
}

// Destroy implements provider.Provider.
func (f *Fake) Destroy(_ context.Context, id string) error {
	f.record("destroy", id)
	f.set(id, provider.StateNotCreated)
	return nil
}

// Status implements provider.Provider.
func (f *Fake) Status(_ context.Context, id string) (provider.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.machines[id]
	if !ok {
		st = provider.StateNotCreated
	}
	return provider.State{ID: st, Short: st, Long: "fake machine " + id + " is " + st}, nil
}

// Exec implements provider.Provider.
func (f *Fake) Exec(ctx context.Context, id string, cmd provider.Command) (int, error) {
	f.record("exec", id)
	f.mu.Lock()
	f.execs = append(f.execs, cmd)
	running := f.machines[id] == provider.StateRunning
	f.mu.Unlock()
	if !running {
		return -1, provider.ErrNotRunning
	}
	if f.ExecFunc != nil {
		return f.ExecFunc(ctx, id, cmd)
	}
	_, err := fmt.Fprintln(cmd.Stdout, cmd.Args)
	return 0, err
}

// Check implements provider.Checker.
func (f *Fake) Check(context.Context) error { return f.CheckErr }
