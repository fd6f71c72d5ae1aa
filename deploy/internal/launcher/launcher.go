// Package launcher runs the whole Plinth suite on one machine: NATS, Postgres and every
// service binary under services/, with prefixed logs and an orderly stop.
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

// Run starts the suite and blocks until ctx ends, a signal arrives on interrupts, or a
// service exits on its own; then it stops services (SIGTERM, then SIGKILL after
// c.StopTimeout, or at once on a second signal), then NATS, then a private Postgres.
// An interrupt is a normal end, also in the middle of starting up: Run then returns nil.
func Run(ctx context.Context, c Config, interrupts <-chan os.Signal) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err := run(ctx, cancel, c, interrupts)
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func run(ctx context.Context, cancel func(), c Config, interrupts <-chan os.Signal) (err error) {
	found, err := Discover(c.Root)
	if err != nil {
		return err
	}
	con := NewConsole(c.Out, c.Color, nameWidth(found))
	self := con.Writer("plinth-up")
	defer self.Close()
	say := func(format string, args ...any) { fmt.Fprintf(self, format+"\n", args...) }

	if err := os.MkdirAll(c.Home, 0o755); err != nil { // postgres must traverse it to its data dir
		return fmt.Errorf("create %s: %w", c.Home, err)
	}
	release, err := lockHome(c.Home)
	if err != nil {
		return err
	}
	defer release()
	endpointsPath := filepath.Join(c.Home, EndpointsFile)
	_ = os.Remove(endpointsPath) // left by a run that was killed
	defer func() { _ = os.Remove(endpointsPath) }()

	force, finished := make(chan struct{}), make(chan struct{})
	defer close(finished)
	go watchInterrupts(interrupts, cancel, force, finished, say)

	placed, warnings, err := Plan(found, c.Home, c.PortOffset, portFree)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		say("warning: %s", w)
	}

	db, err := openDatabase(ctx, c, say, textLogger(con.Writer("postgres"), slog.LevelInfo), con.Writer("apt"))
	if err != nil {
		return err
	}
	// Deferred stops run in reverse: services, then NATS, then Postgres.
	defer say("stopped")
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if stopErr := db.stop(stopCtx); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stop private Postgres: %w", stopErr))
		}
	}()
	say("Postgres: %s (%s)", redact(db.url), db.describe)
	// NATS logs its banner and every start step at info; only problems belong on the console.
	bus, err := startBus(c, say, textLogger(con.Writer("nats"), slog.LevelWarn))
	if err != nil {
		return err
	}
	defer bus.stop()
	say("NATS: %s (%s)", bus.url, bus.describe)

	infra := Infra{DatabaseURL: db.url, NATSURL: bus.url}
	if err := buildBinaries(ctx, c.Root, filepath.Join(c.Home, "bin"), found, con.Writer("go build")); err != nil {
		return err
	}
	children, err := startAll(ctx, c, con, placed, infra, say)
	defer func() {
		if len(children) > 0 {
			say("stopping %d service(s)", len(children))
			stopChildren(children, c.StopTimeout, force, say)
		}
	}()
	if err != nil {
		return err
	}
	return serve(ctx, c, children, placed, infra, say, self)
}

// serve publishes the endpoints and waits for the end of the run.
func serve(ctx context.Context, c Config, children []*child, placed []Placement, infra Infra, say func(string, ...any), out io.Writer) error {
	pids := map[string]int{}
	for _, ch := range children {
		pids[ch.name] = ch.pid()
	}
	e := Endpoints{NATS: infra.NATSURL, Database: infra.DatabaseURL}
	for _, p := range placed {
		if _, started := pids[p.Spec.Binary]; !started {
			continue // skipped by its Prepare
		}
		e.Services = append(e.Services, ServiceEndpoint{Name: p.Spec.Binary, GRPC: p.GRPC, Admin: p.Admin, PID: pids[p.Spec.Binary]})
		if p.Spec.Binary == GatewayBinary {
			e.Gateway = p.GRPC
		}
	}
	printEndpoints(out, e)
	if err := writeEndpoints(c.Home, e); err != nil {
		return err
	}
	if len(children) == 0 {
		say("no services under services/ yet: NATS and Postgres are up. Ctrl-C to stop.")
	} else {
		say("%d service(s) ready; endpoints in %s", len(children), filepath.Join(c.Home, EndpointsFile))
		if hint := grpcurlHint(e); hint != "" {
			say("%s", hint)
		}
		say("Ctrl-C to stop.")
	}
	exited := make(chan *child, len(children))
	for _, ch := range children {
		go func() {
			select {
			case <-ch.done:
				exited <- ch
			case <-ctx.Done():
			}
		}()
	}
	select {
	case <-ctx.Done():
		return nil
	case ch := <-exited:
		return fmt.Errorf("%s exited on its own (%v): stopping the suite; its output is above", ch.name, ch.err)
	}
}

// watchInterrupts cancels the run on the first signal and closes force on the second.
func watchInterrupts(interrupts <-chan os.Signal, cancel func(), force, finished chan struct{}, say func(string, ...any)) {
	select {
	case <-interrupts:
		say("stopping (interrupt again to kill at once)")
		cancel()
	case <-finished:
		return
	}
	select {
	case <-interrupts:
		say("killing")
		close(force)
	case <-finished:
	}
}

// nameWidth is the column the console pads names to: the longest name it will print.
func nameWidth(found []Binary) int {
	w := len("plinth-up")
	for _, b := range found {
		w = max(w, len(b.Name))
	}
	return w
}

// textLogger formats library logs (embedded NATS, private Postgres) for the console.
func textLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{} // the console is read live; timestamps are noise there
			}
			return a
		},
	}))
}
