package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
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

// session is what `make up` and `-infra-only` share before their own work: the binaries
// found, the console, the runtime home locked for this launcher with its state file, and
// the interrupt watcher.
type session struct {
	found []Binary
	con   *Console
	out   io.Writer            // the console's plinth-up pane
	self  func(string, ...any) // says a line there
	// force is closed by a second interrupt: stop services at once.
	force chan struct{}
}

// openSession discovers the binaries, opens the console, locks c.Home and removes the
// state file a killed run may have left (HOME/stateFile, removed again at the end), and
// watches interrupts (the first cancels, the second forces). end undoes it all; call it
// last (defer it first).
func openSession(c Config, cancel func(), interrupts <-chan os.Signal, stateFile string) (s *session, end func(), err error) {
	found, err := Discover(c.Root)
	if err != nil {
		return nil, nil, err
	}
	con := NewConsole(c.Out, c.Color, nameWidth(found))
	w := con.Writer("plinth-up")
	say := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	undo := []func(){func() { w.Close() }}
	end = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	if err := os.MkdirAll(c.Home, 0o755); err != nil { // postgres must traverse it to its data dir
		end()
		return nil, nil, fmt.Errorf("create %s: %w", c.Home, err)
	}
	release, err := lockHome(c.Home)
	if err != nil {
		end()
		return nil, nil, err
	}
	undo = append(undo, release)
	statePath := filepath.Join(c.Home, stateFile)
	_ = os.Remove(statePath) // left by a run that was killed
	undo = append(undo, func() { _ = os.Remove(statePath) })
	force, finished := make(chan struct{}), make(chan struct{})
	undo = append(undo, func() { close(finished) })
	go watchInterrupts(interrupts, cancel, force, finished, say)
	return &session{found: found, con: con, out: w, self: say, force: force}, end, nil
}

// startInfra opens Postgres and starts (or checks) NATS for the services. stop ends them in
// reverse (NATS, then a private Postgres) and says "stopped".
func (s *session) startInfra(ctx context.Context, c Config) (infra Infra, stop func() error, err error) {
	say := s.self
	db, err := openDatabase(ctx, c, say, textLogger(s.con.Writer("postgres"), slog.LevelInfo), s.con.Writer("apt"))
	if err != nil {
		return Infra{}, nil, err
	}
	stopDB := func() error {
		defer say("stopped")
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := db.stop(stopCtx); err != nil {
			return fmt.Errorf("stop private Postgres: %w", err)
		}
		return nil
	}
	say("Postgres: %s (%s)", redact(db.url), db.describe)
	// NATS logs its banner and every start step at info; only problems belong on the console.
	bus, err := startBus(c, say, textLogger(s.con.Writer("nats"), slog.LevelWarn))
	if err != nil {
		return Infra{}, nil, errors.Join(err, stopDB())
	}
	say("NATS: %s (%s)", bus.url, bus.describe)
	stop = func() error {
		bus.stop()
		return stopDB()
	}
	return Infra{DatabaseURL: db.url, NATSURL: bus.url}, stop, nil
}
