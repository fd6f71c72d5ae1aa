package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseConfigInfraOnlyAndRunExcludeEachOther(t *testing.T) {
	root := repoRoot(t)
	c, err := ParseConfig([]string{"-root", root, "-run", "auth"}, envOf(nil), io.Discard)
	if err != nil || c.RunBinary != "auth" || c.InfraOnly {
		t.Fatalf("-run auth: %+v %v", c, err)
	}
	if _, err := ParseConfig([]string{"-root", root, "-run", "auth", "-infra-only"}, envOf(nil), io.Discard); err == nil ||
		!strings.Contains(err.Error(), "exclude each other") {
		t.Fatalf("both modes accepted: %v", err)
	}
}

// TestInfraFileRoundTrip: -run gets the URLs as written, password included, from a file only
// the owner can read.
func TestInfraFileRoundTrip(t *testing.T) {
	home := t.TempDir()
	if _, err := readInfra(home); err == nil || !strings.Contains(err.Error(), "-infra-only") {
		t.Fatalf("missing file: %v", err)
	}
	want := Infra{DatabaseURL: "postgres://u:secret@db:5432/plinth", NATSURL: "nats://127.0.0.1:4222"}
	if err := writeInfra(home, want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(home, InfraFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("infra file mode %v (%v), want 0600", fi.Mode(), err)
	}
	if got, err := readInfra(home); err != nil || got != want {
		t.Fatalf("read back %+v %v, want %+v", got, err, want)
	}
	if err := os.WriteFile(filepath.Join(home, InfraFile), []byte(`{"nats_url":"nats://x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readInfra(home); err == nil {
		t.Fatal("a file without the database URL was accepted")
	}
}

// TestRequireInfraFollowsTheHomeLock: -run trusts infra.json only while a launcher holds the
// home.
func TestRequireInfraFollowsTheHomeLock(t *testing.T) {
	home := t.TempDir()
	if err := requireInfra(filepath.Join(home, "missing")); err == nil {
		t.Fatal("a home that does not exist passed")
	}
	if err := requireInfra(home); err == nil {
		t.Fatal("a home nobody holds passed")
	}
	release, err := lockHome(home)
	if err != nil {
		t.Fatal(err)
	}
	if err := requireInfra(home); err != nil {
		t.Fatalf("held home: %v", err)
	}
	release()
	if err := requireInfra(home); err == nil {
		t.Fatal("a released home passed")
	}
}

// TestPrepareOneTakesTurns: Tilt starts kaas and vagrant-runner side by side and both bootstrap
// vagrant-server's single first token; their Prepares must not overlap. A skip is an error:
// the binary was asked for by name.
func TestPrepareOneTakesTurns(t *testing.T) {
	home := t.TempDir()
	var inside, overlaps atomic.Int32
	slow := func(context.Context, Config, map[string]Placement, func(string, ...any)) error {
		if inside.Add(1) > 1 {
			overlaps.Add(1)
		}
		time.Sleep(50 * time.Millisecond)
		inside.Add(-1)
		return nil
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			p := Placement{Spec: Spec{Binary: fmt.Sprint("b", i), Prepare: slow}}
			if err := prepareOne(context.Background(), Config{Home: home}, p, nil, func(string, ...any) {}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if overlaps.Load() > 0 {
		t.Fatalf("%d Prepares ran at the same time as another", overlaps.Load())
	}
	skip := func(context.Context, Config, map[string]Placement, func(string, ...any)) error {
		return fmt.Errorf("%w: needs root", ErrSkip)
	}
	err := prepareOne(context.Background(), Config{Home: home}, Placement{Spec: Spec{Binary: "lvmd-agent", Prepare: skip}}, nil, func(string, ...any) {})
	if !errors.Is(err, ErrSkip) || !strings.Contains(err.Error(), "lvmd-agent cannot run here") {
		t.Fatalf("skip: %v", err)
	}
}
