package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/deploy/internal/launcher"
)

// adminPassword is the first user's password in the soak's own database.
const adminPassword = "soak-admin-password"

// suite is a running plinth-up.
type suite struct {
	cmd       *exec.Cmd
	home      string
	endpoints launcher.Endpoints
	database  string
	// ownVG is the volume group made for this soak's lvmd-agent (as root with lvm2), removed
	// by stop; "" when the user named one with PLINTH_LVMD_VG, which is theirs to keep.
	ownVG string
}

// startSuite runs plinth-up on its own database and waits until every service is ready.
func startSuite(ctx context.Context, o options) (*suite, error) {
	db := "plinth_soak_" + strconv.Itoa(os.Getpid())
	// Volume groups are global to the machine: without one of the user's choosing, the soak
	// gets its own rather than the developer's "plinth".
	vg, ownVG := os.Getenv("PLINTH_LVMD_VG"), ""
	if vg == "" {
		vg, ownVG = db, db
	}
	cmd := exec.CommandContext(ctx, o.up, "-port-offset", strconv.Itoa(o.offset), "-database-name", db)
	cmd.Env = append(os.Environ(), "PLINTH_HOME="+o.home, "PLINTH_ADMIN_PASSWORD="+adminPassword, "PLINTH_LVMD_VG="+vg)
	logFile, err := os.Create(filepath.Join(o.home, "suite.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.up, err)
	}
	s := &suite{cmd: cmd, home: o.home, database: db, ownVG: ownVG}
	if err := s.waitReady(ctx, 10*time.Minute); err != nil {
		s.stop()
		return nil, fmt.Errorf("%w (log: %s)", err, logFile.Name())
	}
	return s, nil
}

// waitReady waits for endpoints.json and a 200 from every service's /readyz.
func (s *suite) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := os.ReadFile(filepath.Join(s.home, launcher.EndpointsFile))
		if err == nil && json.Unmarshal(data, &s.endpoints) == nil && len(s.endpoints.Services) > 0 && s.allReady() {
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("the suite was not ready within %s", timeout)
}

// readyClient bounds each readiness probe: a service that accepts the connection and never
// answers must not stall the wait past its own timeout.
var readyClient = &http.Client{Timeout: 2 * time.Second}

func (s *suite) allReady() bool {
	for _, e := range s.endpoints.Services {
		resp, err := readyClient.Get("http://" + e.Admin + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false
		}
	}
	return true
}

// service returns the endpoint of the binary name, if it runs.
func (s *suite) service(name string) (launcher.ServiceEndpoint, bool) {
	for _, e := range s.endpoints.Services {
		if e.Name == name {
			return e, true
		}
	}
	return launcher.ServiceEndpoint{}, false
}

// stop interrupts plinth-up (which stops every service), waits for it and drops the soak's
// database and volume group.
func (s *suite) stop() {
	if s.cmd.Process == nil || s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.cmd.Wait()
	s.removeVG()
	if s.endpoints.Database == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(s.endpoints.Database)
	if err != nil {
		return
	}
	cfg.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "could not drop database %s: %v\n", s.database, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{s.database}.Sanitize()+" WITH (FORCE)"); err != nil {
		fmt.Fprintf(os.Stderr, "could not drop database %s: %v\n", s.database, err)
	}
}

// removeVG removes the volume group the launcher made for the soak's own lvmd-agent.
func (s *suite) removeVG() {
	if s.ownVG == "" {
		return
	}
	if err := launcher.RemoveDevVG(context.Background(), s.home, s.ownVG); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}
