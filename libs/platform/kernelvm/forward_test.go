package kernelvm

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// The URLs the host side of TestForwardedPortsTakeConcurrentConnections hands the guest.
const (
	guestDatabaseURL = "KERNELVM_TEST_DATABASE_URL"
	guestNATSURL     = "KERNELVM_TEST_NATS_URL"
)

// TestForwardedPortsTakeConcurrentConnections runs in a guest whatever the host has (an
// internal test, so it can): the host's Postgres and NATS, on 127.0.0.1 ports forwarded
// into the guest, serve a pool of eight connections held at once, then many short-lived
// ones, and a NATS request and reply, all through URLs naming 127.0.0.1 as on the host.
func TestForwardedPortsTakeConcurrentConnections(t *testing.T) {
	if !InGuest() {
		db := testenv.DB(t) // its schema is made and dropped here, on the host
		natsURL := testenv.NATS(t)
		runInGuest(t, Options{
			ForwardPorts: []int{loopbackPort(t, db.URL), loopbackPort(t, natsURL)},
			Env:          []string{guestDatabaseURL + "=" + db.URL, guestNATSURL + "=" + natsURL},
		})
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	t.Run("postgres", func(t *testing.T) { checkPostgresPool(ctx, t, os.Getenv(guestDatabaseURL)) })
	t.Run("nats", func(t *testing.T) { checkNATS(t, os.Getenv(guestNATSURL)) })
}

// loopbackPort is the port of a URL naming 127.0.0.1 or localhost: what can be forwarded.
func loopbackPort(t *testing.T, rawURL string) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost") || err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("%s://%s is not a TCP port on 127.0.0.1 that a guest can reach", u.Scheme, u.Host))
	}
	return port
}

func checkPostgresPool(ctx context.Context, t *testing.T, dbURL string) {
	const conns = 8
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = conns
	app := testenv.UniqueName(t, "kernelvm")
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	// Eight connections open and held at once, each its own backend, all seen by the server.
	held := make([]*pgxpool.Conn, conns)
	release := func() {
		for _, c := range held {
			if c != nil {
				c.Release()
			}
		}
	}
	if err := concurrently(conns, func(i int) (err error) {
		held[i], err = pool.Acquire(ctx)
		return err
	}); err != nil {
		release() // pool.Close waits for them
		t.Fatalf("acquire: %v", err)
	}
	pids := map[uint32]bool{}
	for _, c := range held {
		pids[c.Conn().PgConn().PID()] = true
	}
	var seen int
	err = held[0].QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&seen)
	release()
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) != conns || seen != conns {
		t.Fatalf("%d connections held at once: %d backends, the server saw %d; want %d each", conns, len(pids), seen, conns)
	}

	// Sixteen connections opened at once, each used and closed: each relayed on its own.
	if _, err := pool.Exec(ctx, "CREATE TABLE hits (n int)"); err != nil {
		t.Fatal(err)
	}
	const writes = 16
	if err := concurrently(writes, func(n int) error {
		c, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "INSERT INTO hits VALUES ($1)", n)
		return err
	}); err != nil {
		t.Fatalf("insert through a new connection: %v", err)
	}
	var count, sum int
	if err := pool.QueryRow(ctx, "SELECT count(*), sum(n) FROM hits").Scan(&count, &sum); err != nil {
		t.Fatal(err)
	}
	if count != writes || sum != writes*(writes-1)/2 {
		t.Fatalf("hits: %d rows summing to %d, want %d summing to %d", count, sum, writes, writes*(writes-1)/2)
	}
}

// concurrently runs f(0), …, f(n-1) at once and returns the first error.
func concurrently(n int, f func(i int) error) error {
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs <- f(i) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func checkNATS(t *testing.T, natsURL string) {
	nc, err := nats.Connect(natsURL, nats.Timeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	responder, err := nats.Connect(natsURL, nats.Timeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer responder.Close()
	subject := testenv.UniqueName(t, "kernelvm")
	sub, err := responder.Subscribe(subject, func(m *nats.Msg) { _ = m.Respond(append([]byte("re: "), m.Data...)) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := responder.Flush(); err != nil {
		t.Fatal(err)
	}
	reply, err := nc.Request(subject, []byte("from the guest"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if string(reply.Data) != "re: from the guest" {
		t.Fatalf("reply %q", reply.Data)
	}
}
