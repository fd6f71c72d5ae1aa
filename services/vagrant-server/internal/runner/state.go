package runner

import (
	"slices"
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
	// Slots is how many jobs the runner runs at once.
	Slots int
	// Jobs are the jobs running now, oldest first (at most Slots).
	Jobs []string
}

// state is the runner's shared state: registration, config variables, running jobs. Waiters
// learn of changes through the channel changed returns, which is closed and replaced on every
// change.
type state struct {
	mu      sync.Mutex
	status  Status
	vars    []*vagrant.ConfigVar
	changed chan struct{}
}

func newState(id string, slots int) *state {
	return &state{status: Status{ID: id, Slots: slots, Problem: "not connected yet", Since: time.Now()}, changed: make(chan struct{})}
}

func (s *state) snapshot() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.Jobs = slices.Clone(st.Jobs)
	return st
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

func (s *state) addJob(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.Jobs = append(s.status.Jobs, id)
}

func (s *state) removeJob(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.status.Jobs, id); i >= 0 {
		s.status.Jobs = slices.Delete(s.status.Jobs, i, i+1)
	}
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
