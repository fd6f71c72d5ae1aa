package runner

import (
	"sync"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// Status is what the runner reports about itself on /readyz and in metrics.
type Status struct {
	// ID is the runner's id.
	ID string
	// Registered is true while the RunnerConfig stream is open and the server has answered.
	Registered bool
	// Problem says why the runner is not registered ("" while it is).
	Problem string
	// Since is when Registered last changed.
	Since time.Time
	// JobID is the job running now, if any.
	JobID string
}

// state is the runner's shared state: registration, config variables, running job. Waiters
// learn of changes through the channel changed returns, which is closed and replaced on every
// change.
type state struct {
	mu      sync.Mutex
	status  Status
	vars    []*vagrant.ConfigVar
	changed chan struct{}
}

func newState(id string) *state {
	return &state{status: Status{ID: id, Problem: "not connected yet", Since: time.Now()}, changed: make(chan struct{})}
}

func (s *state) snapshot() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// registered returns whether the runner is registered, and a channel closed on the next change.
func (s *state) registered() (bool, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status.Registered, s.changed
}

// setRegistered records registration, or its loss and why.
func (s *state) setRegistered(ok bool, problem string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status.Registered != ok {
		s.status.Since = time.Now()
	}
	s.status.Registered, s.status.Problem = ok, problem
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *state) setJob(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.JobID = id
}

func (s *state) setVars(vars []*vagrant.ConfigVar) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vars = vars
}

func (s *state) configVars() []*vagrant.ConfigVar {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.vars
}
