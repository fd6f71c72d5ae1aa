package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func TestLvmdUsesTheUsersOwnConfig(t *testing.T) {
	if env := lvmdEnv(Config{Home: "/h"}, nil); env["PLINTH_LVMD_CONFIG"] != filepath.Join("/h", "lvm", "lvmd.yaml") {
		t.Fatalf("without a config of their own: %v", env)
	}
	own := Config{Home: "/h", LvmdConfig: "/etc/topolvm/lvmd.yaml"}
	if env := lvmdEnv(own, nil); env != nil {
		t.Fatalf("the user's own config must be left alone: %v", env)
	}
	var said []string
	say := func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
	if err := ensureLvmdVG(context.Background(), Config{Home: t.TempDir(), LvmdConfig: own.LvmdConfig}, nil, say); err != nil || len(said) != 1 || !strings.Contains(said[0], "/etc/topolvm/lvmd.yaml") {
		t.Fatalf("%v %q", err, said)
	}
}

// TestStartAllSkipsWhatPrepareSkips leaves a binary out when its Prepare says ErrSkip: one
// line says why, nothing is started for it, and the run goes on.
func TestStartAllSkipsWhatPrepareSkips(t *testing.T) {
	skip := func(context.Context, Config, map[string]Placement, func(string, ...any)) error {
		return fmt.Errorf("%w: needs root", ErrSkip)
	}
	placed := []Placement{{Spec: Spec{Binary: "lvmd-agent", Prepare: skip}, Admin: "127.0.0.1:1"}}
	var said []string
	say := func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
	children, err := startAll(context.Background(), Config{Home: t.TempDir()}, NewConsole(io.Discard, false, 80), placed, Infra{}, nil, say)
	if err != nil || len(children) != 0 {
		t.Fatalf("children %v, err %v", children, err)
	}
	if len(said) != 1 || !strings.Contains(said[0], "lvmd-agent") || !strings.Contains(said[0], "needs root") {
		t.Fatalf("said %q", said)
	}
	failing := func(context.Context, Config, map[string]Placement, func(string, ...any)) error {
		return errors.New("boom")
	}
	placed[0].Spec.Prepare = failing
	if _, err := startAll(context.Background(), Config{Home: t.TempDir()}, NewConsole(io.Discard, false, 80), placed, Infra{}, nil, say); err == nil {
		t.Fatal("another Prepare error must still stop the launch")
	}
}
