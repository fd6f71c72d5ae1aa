package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
)

// Budgets for a cold machine: the first run builds every service.
const (
	readyTimeout = 4 * time.Minute
	stopTimeout  = 60 * time.Second
)

// TestMakeUp runs the launcher as `make up` does, checks everything it reports, and stops it
// with Ctrl-C's signal.
func TestMakeUp(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	bin := buildLauncher(t, root)
	home := newHome(t)
	dbName := fmt.Sprintf("plinth_e2e_%d", rand.Uint32())
	l := startLauncher(t, bin, root, home, freeOffset(t, bandMakeUp), "PLINTH_DATABASE_NAME="+dbName, ownDevVG(t, home))
	e := l.waitEndpoints(t, readyTimeout)
	defer dropDatabase(t, e.Database, dbName)

	checkNATS(t, e)
	connectDB(t, e.Database, dbName)
	if len(e.Services) == 0 {
		t.Log("no services under services/ yet: checked NATS and Postgres only")
	}
	for _, s := range e.Services {
		checkAdmin(t, s.Name, s.Admin)
		if s.GRPC != "" {
			checkGRPC(t, s.Name, s.GRPC)
		}
		if s.Name == "vagrant-runner" {
			checkRunnerRegistered(t, s.Admin)
		}
	}
	running := processesUsing(t, home)
	if len(running) < len(e.Services) {
		t.Errorf("found %d processes under %s, want at least the %d services: %v", len(running), home, len(e.Services), running)
	}

	l.interrupt(t, stopTimeout)
	if left := processesUsing(t, home); len(left) > 0 {
		t.Errorf("processes left after the launcher exited: %v", left)
	}
}

// TestMakeUpPrivatePostgresKeepsData forces the private cluster under HOME/postgres and checks
// that a restart keeps both the database and the JetStream data.
func TestMakeUpPrivatePostgresKeepsData(t *testing.T) {
	t.Parallel()
	if _, err := pglocal.FindBinaries(); err != nil {
		skipOrFail(t, "%v", err)
	}
	root := repoRoot(t)
	bin := buildLauncher(t, root)
	home := newHome(t)
	offset := freeOffset(t, bandPrivatePostgres)
	vg := ownDevVG(t, home)

	first := startLauncher(t, bin, root, home, offset, "PLINTH_PRIVATE_POSTGRES=1", vg)
	e := first.waitEndpoints(t, readyTimeout)
	if len(processesUsing(t, filepath.Join(home, "postgres"))) == 0 {
		t.Fatal("no postmaster running on HOME/postgres: the launcher did not start a private cluster")
	}
	db := connectDB(t, e.Database, "plinth")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.Exec(ctx, "CREATE TABLE e2e_kept (v text); INSERT INTO e2e_kept VALUES ('kept')"); err != nil {
		t.Fatal(err)
	}
	_ = db.Close(ctx)
	publishKept(ctx, t, e)
	first.interrupt(t, stopTimeout)
	if left := processesUsing(t, home); len(left) > 0 {
		t.Fatalf("processes left after the first run: %v", left)
	}

	second := startLauncher(t, bin, root, home, offset, "PLINTH_PRIVATE_POSTGRES=1", vg)
	e = second.waitEndpoints(t, readyTimeout)
	var v string
	if err := connectDB(t, e.Database, "plinth").QueryRow(ctx, "SELECT v FROM e2e_kept").Scan(&v); err != nil || v != "kept" {
		t.Errorf("row after restart = %q, %v; want the row written before", v, err)
	}
	checkKept(ctx, t, e)
	second.interrupt(t, stopTimeout)
	if left := processesUsing(t, home); len(left) > 0 {
		t.Errorf("processes left after the second run: %v", left)
	}
}

func publishKept(ctx context.Context, t *testing.T, e endpoints) {
	t.Helper()
	nc := connectNATS(t, e)
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "E2E_KEPT", Subjects: []string{"e2e.kept"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "e2e.kept", []byte("kept")); err != nil {
		t.Fatal(err)
	}
}

func checkKept(ctx context.Context, t *testing.T, e endpoints) {
	t.Helper()
	nc := connectNATS(t, e)
	js, _ := jetstream.New(nc)
	s, err := js.Stream(ctx, "E2E_KEPT")
	if err != nil {
		t.Fatalf("stream after restart: %v", err)
	}
	msg, err := s.GetMsg(ctx, 1)
	if err != nil || string(msg.Data) != "kept" {
		t.Errorf("message after restart: %v %v; want the one published before", msg, err)
	}
}
