package pglocal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// runner executes the PostgreSQL tools, switching to the postgres user when this
// process is root: initdb and the postmaster refuse to run as root.
type runner struct {
	binDir string
	// owner is nil when running as ourselves; otherwise the account that owns the
	// cluster files and runs every PostgreSQL program.
	owner *account
}

type account struct {
	name     string
	uid, gid int
}

func newRunner(binDir string) (*runner, error) {
	r := &runner{binDir: binDir}
	if os.Geteuid() != 0 {
		return r, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL must run as the `postgres` user, "+
			"which does not exist (%v): install the postgresql package (it creates the user) "+
			"or run as an unprivileged user", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("postgres user uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("postgres user gid %q: %w", u.Gid, err)
	}
	if _, err := exec.LookPath("runuser"); err != nil {
		return nil, fmt.Errorf("running as root needs runuser (util-linux) to start PostgreSQL " +
			"as the postgres user: install util-linux or run as an unprivileged user")
	}
	r.owner = &account{name: u.Username, uid: uid, gid: gid}
	return r, nil
}

// run executes a PostgreSQL program from binDir and returns its combined output.
func (r *runner) run(ctx context.Context, program string, args ...string) (string, error) {
	return r.runInput(ctx, "", program, args...)
}

// runInput is run with stdin as the program's standard input.
func (r *runner) runInput(ctx context.Context, stdin, program string, args ...string) (string, error) {
	path := filepath.Join(r.binDir, program)
	var cmd *exec.Cmd
	if r.owner != nil {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", r.owner.name, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	// The postgres user usually cannot enter our working directory (e.g. /root);
	// initdb and pg_ctl complain when they cannot.
	cmd.Dir = "/"
	cmd.Env = cleanEnv(os.Environ())
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	// pg_ctl start leaves a postmaster behind; should it ever inherit our pipes, do
	// not wait for it to close them.
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	text := strings.TrimSpace(out.String())
	if err != nil {
		return text, fmt.Errorf("%s %s: %w: %s", program, strings.Join(args, " "), err, text)
	}
	return text, nil
}

// chown hands a path we created to the cluster owner.
func (r *runner) chown(path string) error {
	if r.owner == nil {
		return nil
	}
	if err := os.Chown(path, r.owner.uid, r.owner.gid); err != nil {
		return fmt.Errorf("chown %s to postgres: %w", path, err)
	}
	return nil
}

// checkAccess verifies that the cluster owner can write dir. A root-owned 0700
// parent (a typical temp or home directory) otherwise fails deep inside initdb.
func (r *runner) checkAccess(ctx context.Context, dir string) error {
	if r.owner == nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, "runuser", "-u", r.owner.name, "--", "test", "-w", dir, "-a", "-x", dir)
	cmd.Dir = "/"
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the postgres user cannot use %s: every parent directory must be "+
			"searchable by it (chmod o+x on the parents, or choose a data directory outside "+
			"private directories such as /root)", dir)
	}
	return nil
}

// cleanEnv drops libpq/server variables that would override the explicit flags we pass.
func cleanEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, "PG") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
