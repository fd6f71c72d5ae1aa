package cephlocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// dirs are the cluster's subdirectories.
var dirs = []string{"mon/ceph-a", "mgr/ceph-x", "osd/ceph-0", "rgw/ceph-x", "run", "log", "crash"}

// bootstrap writes ceph.conf and every keyring and creates the mon's store, as vstart.sh does
// by hand. The mgr, OSD and radosgw keys are imported into the mon's store at mkfs, which
// saves a round of CLI calls once the mon runs. What an earlier, failed bootstrap left (no
// cluster.json was written) is removed first.
func (c *Cluster) bootstrap(ctx context.Context) error {
	for _, d := range []string{"mon", "mgr", "osd", "rgw", "run", "monmap", "mon.keyring", "ceph.client.admin.keyring", "dashboard.pw"} {
		if err := os.RemoveAll(filepath.Join(c.dir, d)); err != nil {
			return fmt.Errorf("cephlocal: clear a failed bootstrap: %w", err)
		}
	}
	c.fsid = uuid.NewString()
	if err := c.writeConf(); err != nil {
		return err
	}
	monKeyring := filepath.Join(c.dir, "mon.keyring")
	keys := []struct {
		path, name string
		caps       []string
	}{
		{monKeyring, "mon.", []string{"mon", "allow *"}},
		{filepath.Join(c.dir, "ceph.client.admin.keyring"), "client.admin",
			[]string{"mon", "allow *", "osd", "allow *", "mds", "allow *", "mgr", "allow *"}},
		{filepath.Join(c.dir, "mgr/ceph-x/keyring"), "mgr.x",
			[]string{"mon", "allow profile mgr", "osd", "allow *", "mds", "allow *"}},
		{filepath.Join(c.dir, "osd/ceph-0/keyring"), "osd.0",
			[]string{"mon", "allow profile osd", "mgr", "allow profile osd", "osd", "allow *"}},
		{filepath.Join(c.dir, "rgw/ceph-x/keyring"), "client.rgw.x",
			[]string{"mon", "allow rw", "osd", "allow rwx", "mgr", "allow rw"}},
	}
	for i, k := range keys {
		args := []string{"--create-keyring", k.path, "--gen-key", "-n", k.name}
		for j := 0; j < len(k.caps); j += 2 {
			args = append(args, "--cap", k.caps[j], k.caps[j+1])
		}
		if _, err := c.Run(ctx, "ceph-authtool", args...); err != nil {
			return err
		}
		if i > 0 {
			if _, err := c.Run(ctx, "ceph-authtool", monKeyring, "--import-keyring", k.path); err != nil {
				return err
			}
		}
	}
	monmap := filepath.Join(c.dir, "monmap")
	if _, err := c.Run(ctx, "monmaptool", "--create", "--fsid", c.fsid, "--addv", "a", c.ports.monAddrs(), monmap); err != nil {
		return err
	}
	c.log.Info("creating a new Ceph cluster", "fsid", c.fsid, "dir", c.dir)
	_, err := c.Run(ctx, "ceph-mon", "-c", c.conf, "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", monKeyring)
	return err
}

// writeConf creates the directories and (re)writes ceph.conf with this start's ports.
func (c *Cluster) writeConf() error {
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(c.dir, d), 0o755); err != nil {
			return fmt.Errorf("cephlocal: %w", err)
		}
	}
	// The keyrings and the dashboard password are secrets: the directory is the owner's.
	if err := os.Chmod(c.dir, 0o700); err != nil {
		return fmt.Errorf("cephlocal: %w", err)
	}
	if err := os.WriteFile(c.conf, []byte(config(c.dir, c.fsid, c.ports, c.opts)), 0o644); err != nil {
		return fmt.Errorf("cephlocal: %w", err)
	}
	return nil
}

// reuse prepares an existing cluster for a new start: ceph.conf with this start's ports and,
// when they changed, the mon's map re-addressed (the mon finds itself in it by address).
func (c *Cluster) reuse(ctx context.Context, st state) error {
	if err := c.writeConf(); err != nil {
		return err
	}
	if st.Base == c.ports.Base() {
		return nil
	}
	monmap := filepath.Join(c.dir, "monmap")
	steps := [][]string{
		{"ceph-mon", "-c", c.conf, "-i", "a", "--extract-monmap", monmap},
		{"monmaptool", "--rm", "a", monmap},
		{"monmaptool", "--addv", "a", c.ports.monAddrs(), monmap},
		{"ceph-mon", "-c", c.conf, "-i", "a", "--inject-monmap", monmap},
	}
	for _, s := range steps {
		if _, err := c.Run(ctx, s[0], s[1:]...); err != nil {
			return fmt.Errorf("cephlocal: move the mon from port %d to %d: %w", st.Base, c.ports.Base(), err)
		}
	}
	c.log.Info("Ceph mon moved to new ports", "from", st.Base, "to", c.ports.Base())
	return writeState(c.dir, state{FSID: c.fsid, Base: c.ports.Base()})
}

// configureModules waits until the mon answers, then sets the mgr modules' options, in
// parallel: each CLI call costs about half a second of Python start-up.
func (c *Cluster) configureModules(ctx context.Context) error {
	var err error
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if err = c.exitedDaemon(); err != nil {
			return fmt.Errorf("cephlocal: %w", err)
		}
		if _, err = c.Run(ctx, "ceph", "--connect-timeout", "2", "mon", "stat"); err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("cephlocal: the mon does not answer: %w", err)
		}
	}
	opts := moduleOptions(c.ports, c.opts)
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		wg.Go(func() { _, errs[i] = c.Run(ctx, "ceph", "config", "set", "mgr", o[0], o[1], "--force") })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// createOSD allocates osd.0 in the OSD map and creates its memstore.
func (c *Cluster) createOSD(ctx context.Context) error {
	id := uuid.NewString()
	out, err := c.Run(ctx, "ceph", "osd", "new", id)
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) != "0" {
		return fmt.Errorf("cephlocal: ceph osd new gave id %q, want 0: %s is not a cluster of this package's", strings.TrimSpace(out), c.dir)
	}
	_, err = c.Run(ctx, "ceph-osd", "-c", c.conf, "-i", "0", "--mkfs", "--osd-uuid", id)
	return err
}

// Command is an *exec.Cmd for a Ceph client program (ceph, rados, rbd, radosgw-admin, …),
// with CEPH_CONF pointing at the cluster.
func (c *Cluster) Command(ctx context.Context, program string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Env = append(os.Environ(), "CEPH_CONF="+c.conf)
	cmd.Dir = c.dir
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Run runs a Ceph client program against the cluster (at most a minute) and returns its
// stdout; the error carries its stderr.
func (c *Cluster) Run(ctx context.Context, program string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := c.Command(ctx, program, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", program, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
