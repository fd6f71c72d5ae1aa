package launcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/plinth-dev/plinth/deploy/internal/vagranttoken"
)

// runnerStateDir is where make up keeps the vagrant-runner's id and login token.
func runnerStateDir(home string) string { return filepath.Join(home, "vagrant-runner") }

// kaasRunnerID is the runner id make up reserves for kaas: the vagrant-runner registers it
// by-id-only beside its own (PLINTH_VAGRANT_RUNNER_RESERVED_ID) and kaas's jobs target it
// (PLINTH_KAAS_VAGRANT_RUNNER_ID), so a user's long jobs, which go to the runner's general
// slots, never delay cluster provisioning. It is derived from the runtime home: stable across
// restarts, and two suites sharing one database do not take each other's machine jobs.
func kaasRunnerID(home string) string {
	if abs, err := filepath.Abs(home); err == nil {
		home = abs
	}
	sum := sha256.Sum256([]byte(home))
	return "kaas-" + hex.EncodeToString(sum[:6])
}

// ensureRunnerToken gives the local vagrant-runner a login token so that `make up` has a working
// runner: on a fresh database it bootstraps vagrant-server (the first token can only be had
// once) and keeps the token in the runner's state dir, mode 0600. When the file exists, or the
// server cannot be bootstrapped (someone else did it), it leaves things as they are and says
// what to do; only losing a token it was given is an error.
func ensureRunnerToken(ctx context.Context, c Config, placed map[string]Placement, say func(string, ...any)) error {
	dir := runnerStateDir(c.Home)
	file := filepath.Join(dir, "token")
	if _, err := os.Stat(file); err == nil {
		return nil
	}
	server, ok := placed["vagrant-server"]
	if !ok || server.GRPC == "" {
		return nil
	}
	conn, err := grpc.NewClient(server.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("dial vagrant-server: %w", err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	token, err := vagranttoken.Bootstrap(ctx, conn)
	if errors.Is(err, vagranttoken.ErrBootstrapped) {
		say("vagrant-server was bootstrapped before and %s is missing: the runner stays unregistered until a login token is written there (GenerateLoginToken)", file)
		return nil
	}
	if err != nil {
		// The runner still starts and says it is unregistered; nothing else depends on it.
		say("could not bootstrap vagrant-server for the runner (%v); it stays unregistered until a login token is written to %s", err, file)
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		return errors.Join(errors.New("keep the runner's token"), err)
	}
	say("bootstrapped vagrant-server; the runner's login token is in %s", file)
	return nil
}
