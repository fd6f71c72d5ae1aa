package pglocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const (
	// PassFileName is the pgpass file, inside the data directory, holding the superuser's
	// password. Inside, because the data directory is 0700 and the cluster owner's, and a
	// base backup of the directory carries the file along with the pg_authid it matches.
	PassFileName = "pglocal.pgpass"
	// superuser is the role initdb makes and URL connects as.
	superuser = "postgres"
)

// hba is pg_hba.conf, rewritten at every start: 127.0.0.1 is reachable by every account on
// the machine, so every connection, TCP or unix socket, proves a password (SCRAM-SHA-256).
// Rewriting it also closes clusters made by earlier versions of pglocal, which trusted all.
const hba = `# Written by plinth pglocal at every start; edits here are overwritten.
# Every local account can reach 127.0.0.1: all connections prove a password (scram-sha-256).
local   all           all                  scram-sha-256
local   replication   all                  scram-sha-256
host    all           all    127.0.0.1/32  scram-sha-256
host    replication   all    127.0.0.1/32  scram-sha-256
`

// writeHBA replaces dataDir's pg_hba.conf with hba.
func writeHBA(r *runner, dataDir string) error {
	path := filepath.Join(dataDir, "pg_hba.conf")
	if err := os.WriteFile(path, []byte(hba), 0o600); err != nil {
		return fmt.Errorf("pglocal: write %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil { // WriteFile keeps an existing file's mode
		return fmt.Errorf("pglocal: %w", err)
	}
	if err := r.chown(path); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	return nil
}

// ensurePassword makes sure the superuser has the password in dataDir's pass file. A cluster
// without the file (new, or made by an earlier pglocal) gets a new password, set in
// single-user mode while no server runs — no connection needs to be trusted for it — and
// the file is written only once the server holds the password.
func ensurePassword(ctx context.Context, r *runner, dataDir string) error {
	path := filepath.Join(dataDir, PassFileName)
	if _, err := ReadPassFile(path, superuser); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pglocal: %w", err)
	}
	password, err := NewPassword()
	if err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	verifier, err := SCRAMVerifier(password)
	if err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	// The verifier holds only base64 and "$:": nothing to quote.
	stmt := "ALTER ROLE " + superuser + " PASSWORD '" + verifier + "';\n"
	out, err := r.runInput(ctx, stmt, "postgres", "--single", "-D", dataDir, superuser)
	if err == nil && strings.Contains(out, "ERROR:") {
		err = errors.New(out)
	}
	if err != nil {
		return fmt.Errorf("pglocal: set the %s password in single-user mode: %w", superuser, err)
	}
	if err := WritePassFile(path, superuser, password); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	if err := r.chown(path); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	return nil
}
