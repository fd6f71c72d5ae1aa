package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// startAll starts the placed binaries in waves: a binary starts once the binaries it depends
// on are ready. A binary in skipped (its needs are missing) or whose Prepare returns ErrSkip
// is left out with one line saying why. It returns the children started so far, in start
// order, even on error.
func startAll(ctx context.Context, c Config, con *Console, placed []Placement, infra Infra, skipped map[string]error, say func(string, ...any)) ([]*child, error) {
	byName := map[string]Placement{}
	for _, p := range placed {
		byName[p.Spec.Binary] = p
	}
	if err := prepareSockets(placed); err != nil {
		return nil, err
	}
	var children []*child
	ready := map[string]bool{}
	for len(ready) < len(placed) {
		var wave []int
		for i, p := range placed {
			if !ready[p.Spec.Binary] && depsReady(p, byName, ready) {
				wave = append(wave, i)
			}
		}
		if len(wave) == 0 {
			return children, errors.New("service dependencies form a cycle: fix DependsOn in deploy/internal/launcher/spec.go")
		}
		start := len(children)
		var started []int
		for _, i := range wave {
			p := placed[i]
			for _, d := range p.Spec.DependsOn {
				if _, ok := byName[d]; !ok {
					say("warning: %s depends on %s, which is not under services/; starting it anyway", p.Spec.Binary, d)
				}
			}
			if reason := skipped[p.Spec.Binary]; reason != nil {
				say("%s: %v", p.Spec.Binary, reason)
				ready[p.Spec.Binary] = true
				continue
			}
			if p.Spec.Prepare != nil {
				err := p.Spec.Prepare(ctx, c, byName, say)
				if errors.Is(err, ErrSkip) {
					say("%s: %v", p.Spec.Binary, err)
					ready[p.Spec.Binary] = true
					continue
				}
				if err != nil {
					return children, fmt.Errorf("prepare %s: %w", p.Spec.Binary, err)
				}
			}
			env := ChildEnv(c, p, byName, infra, c.Terminal)
			ch, err := startChild(p.Spec.Binary, filepath.Join(c.Home, "bin", p.Spec.Binary), env, c.Root, con.Writer(p.Spec.Binary))
			if err != nil {
				return children, err
			}
			children = append(children, ch)
			started = append(started, i)
		}
		for k, i := range started {
			if err := children[start+k].waitReady(ctx, placed[i].Admin, c.ReadyTimeout); err != nil {
				return children, err
			}
			ready[placed[i].Spec.Binary] = true
		}
	}
	return children, nil
}

func depsReady(p Placement, byName map[string]Placement, ready map[string]bool) bool {
	for _, d := range p.Spec.DependsOn {
		if _, present := byName[d]; present && !ready[d] {
			return false
		}
	}
	return true
}

// prepareSockets creates socket directories and removes sockets a killed run left behind; the
// home lock guarantees no live process owns them.
func prepareSockets(placed []Placement) error {
	for _, p := range placed {
		path, ok := socketPath(p.GRPC)
		if !ok {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("create socket directory for %s: %w", p.Spec.Binary, err)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove stale socket %s: %w", path, err)
		}
	}
	return nil
}

func socketPath(addr string) (string, bool) {
	path, ok := strings.CutPrefix(addr, "unix://")
	return path, ok && path != ""
}

// specsOf are the specs of the placed binaries.
func specsOf(placed []Placement) []Spec {
	specs := make([]Spec, len(placed))
	for i, p := range placed {
		specs[i] = p.Spec
	}
	return specs
}
