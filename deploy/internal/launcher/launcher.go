// Package launcher runs the whole Plinth suite on one machine: NATS, Postgres and every
// service binary under services/, with prefixed logs and an orderly stop.
package launcher

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/plinth-dev/plinth/libs/platform/events"
)

// Run starts the suite and blocks until ctx ends, a signal arrives on interrupts, or a
// service exits on its own; then it stops services (SIGTERM, then SIGKILL after
// c.StopTimeout, or at once on a second signal), then NATS, then a private Postgres.
// An interrupt is a normal end, also in the middle of starting up: Run then returns nil.
func Run(ctx context.Context, c Config, interrupts <-chan os.Signal) error {
	return withCancel(ctx, func(ctx context.Context, cancel func()) error { return run(ctx, cancel, c, interrupts) })
}

func run(ctx context.Context, cancel func(), c Config, interrupts <-chan os.Signal) (err error) {
	s, err := openSession(c, cancel, interrupts, EndpointsFile)
	if err != nil {
		return err
	}
	defer s.close(&err) // last: NATS, then Postgres, after the services below
	say := s.self

	placed, warnings, err := Plan(s.found, c.Home, c.PortOffset, portFree)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		say("warning: %s", w)
	}
	// Everything the binaries need, installed (or named) at once before anything starts.
	skipped, err := s.settleNeeds(ctx, c, specsOf(placed))
	if err != nil {
		return err
	}
	infra, err := s.startInfra(ctx, c)
	if err != nil {
		return err
	}
	if err := s.build(ctx, c); err != nil {
		return err
	}
	if err := s.startKubeBuild(c); err != nil {
		return err
	}
	if err := s.startDevCeph(ctx, c); err != nil {
		return err
	}
	if err := s.startDevOIDC(ctx, c, placed); err != nil {
		return err
	}
	children, err := startAll(ctx, c, s.con, placed, infra, skipped, say)
	defer func() {
		if len(children) > 0 {
			say("stopping %d service(s)", len(children))
			stopChildren(children, c.StopTimeout, s.force, say)
		}
	}()
	if err != nil {
		return err
	}
	return serve(ctx, c, children, placed, infra, say, s.out)
}

// serve publishes the endpoints and waits for the end of the run.
func serve(ctx context.Context, c Config, children []*child, placed []Placement, infra Infra, say func(string, ...any), out io.Writer) error {
	pids := map[string]int{}
	for _, ch := range children {
		pids[ch.name] = ch.pid()
	}
	e := Endpoints{NATS: infra.NATSURL, Database: infra.DatabaseURL}
	if infra.NATSUsers != "" {
		e.NATSUser, e.NATSPasswordFile = events.AdminUser, filepath.Join(infra.NATSUsers, events.AdminUser)
	}
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
