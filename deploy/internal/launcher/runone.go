package launcher

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// RunService is `plinth-up -run <binary>`: next to a running `plinth-up -infra-only` on the
// same home and port offset, it runs that one binary with exactly the environment Run gives
// it (ports, sockets, NATS, Postgres, the spec's extras) after the spec's Prepare (tokens,
// certificates, volume group). The binary replaces this process, so a supervisor such as Tilt
// signals and restarts the service itself. It returns only on error.
func RunService(ctx context.Context, c Config) error {
	say := func(format string, args ...any) { fmt.Fprintf(c.Out, "plinth-up: "+format+"\n", args...) }
	if err := requireInfra(c.Home); err != nil {
		return err
	}
	infra, err := readInfra(c.Home)
	if err != nil {
		return err
	}
	found, err := Discover(c.Root)
	if err != nil {
		return err
	}
	// The other services already listen on their ports: place without checking them; this
	// binary fails loudly should its own port be taken.
	placed, _, err := Plan(found, c.Home, c.PortOffset, func(int) bool { return true })
	if err != nil {
		return err
	}
	byName := map[string]Placement{}
	for _, p := range placed {
		byName[p.Spec.Binary] = p
	}
	p, ok := byName[c.RunBinary]
	if !ok {
		return fmt.Errorf("-run %s: no such binary under services/*/cmd; there are: %s",
			c.RunBinary, strings.Join(slices.Sorted(maps.Keys(byName)), ", "))
	}
	bin := filepath.Join(c.Home, "bin", p.Spec.Binary)
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s is not built: go build -o %s %s (the Tiltfile's update step does)", bin, bin, Binary{Service: p.Spec.Service, Name: p.Spec.Binary}.Package())
	}
	// -infra-only installed what every binary needs; this settles what is still missing.
	m := thisMachine(c, os.Geteuid(), &aptGet{out: c.Out})
	skipped, err := settleNeeds(ctx, unmetNeeds([]Spec{p.Spec}, c, m), m, say)
	if err != nil {
		return err
	}
	if reason := skipped[p.Spec.Binary]; reason != nil {
		return fmt.Errorf("%s cannot run here: %w", p.Spec.Binary, reason)
	}
	if err := prepareOne(ctx, c, p, byName, say); err != nil {
		return err
	}
	if err := prepareSockets([]Placement{p}); err != nil {
		return err
	}
	// A developer reads this service's log in Tilt's pane: text, unless they chose a format.
	env := ChildEnv(c, p, byName, infra, true)
	if err := os.Chdir(c.Root); err != nil {
		return err
	}
	say("running %s (gRPC %s, admin http://%s)", bin, orDefault(p.GRPC, "none"), p.Admin)
	return fmt.Errorf("exec %s: %w", bin, syscall.Exec(bin, []string{bin}, env))
}

// prepareOne runs the spec's Prepare under HOME/prepare.lock: services started side by side
// (kaas and vagrant-runner both bootstrap vagrant-server's first token) take turns, as they
// do in Run's single loop. A skipped binary is an error here: it was asked for by name.
func prepareOne(ctx context.Context, c Config, p Placement, byName map[string]Placement, say func(string, ...any)) error {
	if p.Spec.Prepare == nil {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(c.Home, "prepare.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	err = p.Spec.Prepare(ctx, c, byName, say)
	if errors.Is(err, ErrSkip) {
		return fmt.Errorf("%s cannot run here: %w", p.Spec.Binary, err)
	}
	if err != nil {
		return fmt.Errorf("prepare %s: %w", p.Spec.Binary, err)
	}
	return nil
}

// requireInfra checks that a launcher holds the home's lock: an infra.json left by one that
// was killed names a NATS and a Postgres that are gone.
func requireInfra(home string) error {
	f, err := os.Open(filepath.Join(home, "lock"))
	if err == nil {
		defer f.Close()
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil // held: -infra-only runs (or make up, which readInfra then tells apart)
		}
	}
	return fmt.Errorf("no plinth-up -infra-only is running with home %s: start it first (Tilt's infra resource), with the same PLINTH_HOME and PLINTH_PORT_OFFSET", home)
}
