package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// withCancel runs a launch with a context it may cancel (on an interrupt); an interrupt is
// a normal end, also in the middle of starting up: the launch then returns nil.
func withCancel(ctx context.Context, launch func(ctx context.Context, cancel func()) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err := launch(ctx, cancel)
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// session is what `make up` and `-infra-only` share: the binaries found, the console, the
// runtime home locked for this launcher with its state file, the interrupt watcher, and
// Postgres and NATS once startInfra ran. close undoes it all, in reverse.
type session struct {
	found []Binary
	con   *Console
	out   io.Writer            // the console's plinth-up pane
	self  func(string, ...any) // says a line there
	// force is closed by a second interrupt: stop services at once.
	force chan struct{}
	// machine finds and installs what the binaries need (needs.go), apt's output on the
	// console's apt pane.
	machine machine
	undo    []func() error
}

// openSession discovers the binaries, opens the console, locks c.Home and removes the
// state file a killed run may have left (HOME/stateFile, removed again by close), and
// watches interrupts (the first cancels, the second forces). Defer close first, so that it
// runs last.
func openSession(c Config, cancel func(), interrupts <-chan os.Signal, stateFile string) (_ *session, err error) {
	found, err := Discover(c.Root)
	if err != nil {
		return nil, err
	}
	if c.only != nil {
		found = slices.DeleteFunc(found, func(b Binary) bool { return !slices.Contains(c.only, b.Name) })
	}
	con := NewConsole(c.Out, c.Color, nameWidth(found))
	w := con.Writer("plinth-up")
	s := &session{found: found, con: con, out: w, self: func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }}
	s.onClose(w.Close)
	apt := con.Writer("apt")
	s.onClose(apt.Close)
	s.machine = thisMachine(c, os.Geteuid(), &aptGet{out: apt})
	defer func() {
		if err != nil {
			s.close(nil)
		}
	}()
	if err := os.MkdirAll(c.Home, 0o755); err != nil { // postgres must traverse it to its data dir
		return nil, fmt.Errorf("create %s: %w", c.Home, err)
	}
	release, err := lockHome(c.Home)
	if err != nil {
		return nil, err
	}
	s.onClose(func() error { release(); return nil })
	statePath := filepath.Join(c.Home, stateFile)
	_ = os.Remove(statePath) // left by a run that was killed
	s.onClose(func() error { _ = os.Remove(statePath); return nil })
	finished := make(chan struct{})
	s.force = make(chan struct{})
	s.onClose(func() error { close(finished); return nil })
	go watchInterrupts(interrupts, cancel, s.force, finished, s.self)
	return s, nil
}

// onClose adds a step to close, which runs them last-added first.
func (s *session) onClose(f func() error) { s.undo = append(s.undo, f) }

// close undoes the session in reverse, joining what fails into *err (when err is not nil).
func (s *session) close(err *error) {
	for i := len(s.undo) - 1; i >= 0; i-- {
		if e := s.undo[i](); e != nil && err != nil {
			*err = errors.Join(*err, e)
		}
	}
	s.undo = nil
}

// startInfra opens Postgres and starts (or checks) NATS for the services; close ends them
// in reverse (NATS, then a private Postgres) and says "stopped".
func (s *session) startInfra(ctx context.Context, c Config) (Infra, error) {
	say := s.self
	db, err := openDatabase(ctx, c, say, textLogger(s.con.Writer("postgres"), slog.LevelInfo), s.machine)
	if err != nil {
		return Infra{}, err
	}
	s.onClose(func() error {
		defer say("stopped")
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := db.stop(stopCtx); err != nil {
			return fmt.Errorf("stop private Postgres: %w", err)
		}
		return nil
	})
	say("Postgres: %s (%s)", redact(db.url), db.describe)
	// NATS logs its banner and every start step at info; only problems belong on the console.
	bus, err := startBus(c, say, textLogger(s.con.Writer("nats"), slog.LevelWarn))
	if err != nil {
		return Infra{}, err
	}
	s.onClose(func() error { bus.stop(); return nil })
	say("NATS: %s (%s)", bus.url, bus.describe)
	return Infra{DatabaseURL: db.url, NATSURL: bus.url, NATSUsers: bus.usersDir}, nil
}

// settleNeeds settles, before anything starts, what specs and a private Postgres need on
// the machine: one apt-get call installs it all when the launcher may (needs.go). It
// returns the binaries to skip, with why.
func (s *session) settleNeeds(ctx context.Context, c Config, specs []Spec) (map[string]error, error) {
	return settleNeeds(ctx, append(postgresNeed(c), unmetNeeds(specs, c, s.machine)...), s.machine, s.self)
}

// startKubeBuild starts, when kaas is among the binaries and its local provider lacks a
// Kubernetes binary, their one-time build in the background (make tools-k8s); close stops it
// first, before the services it would outlive.
func (s *session) startKubeBuild(c Config) error {
	if !slices.ContainsFunc(s.found, func(b Binary) bool { return b.Name == "kaas" }) {
		return nil
	}
	stop, err := startKubeBuild(c, kubeBuildCommand(c.Root), s.self)
	if err != nil {
		return err
	}
	s.onClose(func() error { stop(); return nil })
	return nil
}

// build builds every service binary found into HOME/bin.
func (s *session) build(ctx context.Context, c Config) error {
	return buildBinaries(ctx, c.Root, filepath.Join(c.Home, "bin"), s.found, s.con.Writer("go build"))
}
