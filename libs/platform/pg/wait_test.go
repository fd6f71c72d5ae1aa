package pg_test

import (
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/libs/platform/ports"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// A service started beside its database (a Kubernetes namespace applied at once) waits for it:
// Open succeeds once the server answers, here a second after Open began, through a proxy that
// only starts listening then.
func TestOpenWaitsForADatabaseNotYetReachable(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	db := testenv.DB(t)
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	free, err := ports.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(free[0]))
	go func() {
		time.Sleep(time.Second)
		l, err := net.Listen("tcp", u.Host)
		if err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(func() { _ = l.Close() })
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go proxy(c, target)
		}
	}()
	began := time.Now()
	pool, err := pg.Open(ctx, u.String(), db.Schema, twoMigrations())
	if err != nil {
		t.Fatalf("Open of a database reachable after a second: %v", err)
	}
	pool.Close()
	if waited := time.Since(began); waited < time.Second {
		t.Errorf("Open returned after %s, before the database could be reached", waited)
	}
}

// What waiting cannot cure fails at once: a database that does not exist.
func TestOpenFailsAtOnceOnAnErrorThatWaitingDoesNotCure(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	u, err := url.Parse(testenv.DB(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/no_such_database_" + strings.ToLower(testenv.UniqueName(t, "x"))
	began := time.Now()
	if _, err := pg.Open(ctx, u.String(), "x", twoMigrations()); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Open of a missing database: %v, want its error", err)
	}
	if took := time.Since(began); took > pg.StartWait/2 {
		t.Errorf("Open waited %s for a database that does not exist", took)
	}
}

func proxy(c net.Conn, target string) {
	defer c.Close()
	s, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer s.Close()
	go func() { _, _ = io.Copy(s, c) }()
	_, _ = io.Copy(c, s)
}
