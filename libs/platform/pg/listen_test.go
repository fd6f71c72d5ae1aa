package pg_test

import (
	"context"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

func TestListenOnceDeliversNotificationsAndStopsCleanly(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pg.ListenOnce(ctx, db.Pool, pg.ListenOptions{Channel: "bad-name;", Notify: func(string) {}}); err == nil {
		t.Fatal("an invalid channel name was accepted")
	}
	listenCtx, stop := context.WithCancel(ctx)
	listening := make(chan struct{})
	got := make(chan string, 4)
	done := make(chan error, 1)
	go func() {
		done <- pg.ListenOnce(listenCtx, db.Pool, pg.ListenOptions{
			Channel:   "plinth_listen_test",
			Listening: func() { close(listening) },
			Notify:    func(p string) { got <- p },
			PingEvery: 50 * time.Millisecond, // several idle pings happen during the test
		})
	}()
	<-listening
	time.Sleep(200 * time.Millisecond)
	for _, p := range []string{"one", "two"} {
		if _, err := db.Pool.Exec(ctx, "SELECT pg_notify('plinth_listen_test', $1)", p); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"one", "two"} {
		select {
		case p := <-got:
			if p != want {
				t.Fatalf("payload %q, want %q", p, want)
			}
		case <-ctx.Done():
			t.Fatal("notification never arrived")
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("ListenOnce after cancel: %v", err)
	}
}
