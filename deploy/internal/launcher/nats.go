package launcher

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/natsembed"
)

// bus is the NATS server of this run: the user's, or an embedded one the launcher owns.
type bus struct {
	url      string
	describe string
	embedded *natsembed.Server
	// usersDir holds the password file of each user of the embedded server; "" for the
	// user's own server.
	usersDir string
}

// startBus uses PLINTH_NATS_URL when set (after checking it answers), else starts the
// embedded JetStream server on 4222+offset, or on a free port when that one is taken. The
// embedded server accepts only the suite's users (events.Suite), each with the permissions of
// its role and a password kept under HOME/NATSUsersDir.
func startBus(c Config, say func(string, ...any), log *slog.Logger) (*bus, error) {
	if c.NATSURL != "" {
		nc, err := nats.Connect(c.NATSURL, nats.Timeout(5*time.Second), nats.Name("plinth-up"))
		if err != nil {
			return nil, fmt.Errorf("PLINTH_NATS_URL=%s does not answer (%v): start that server or unset PLINTH_NATS_URL to use the embedded one", c.NATSURL, err)
		}
		nc.Close()
		return &bus{url: c.NATSURL, describe: "from PLINTH_NATS_URL"}, nil
	}
	store := filepath.Join(c.Home, "nats")
	if err := os.MkdirAll(store, 0o700); err != nil {
		return nil, fmt.Errorf("create NATS store %s: %w", store, err)
	}
	port := defaultNATSPort + c.PortOffset
	if !portFree(port) {
		say("127.0.0.1:%d is taken (another NATS server?): the embedded NATS takes a free port instead; set PLINTH_NATS_URL=nats://127.0.0.1:%d to use the one there", port, port)
		port = 0
	}
	users, err := natsUsers(c.Home)
	if err != nil {
		return nil, err
	}
	s, err := natsembed.Start(natsembed.Options{Host: "127.0.0.1", Port: port, StoreDir: store, Logger: log, Users: users})
	if err != nil {
		return nil, fmt.Errorf("start embedded NATS (data %s): %w", store, err)
	}
	dir := filepath.Join(c.Home, NATSUsersDir)
	return &bus{url: s.ClientURL(), embedded: s, usersDir: dir,
		describe: fmt.Sprintf("embedded, JetStream, data %s; a user per service, passwords in %s (admin: user %s)", store, dir, events.AdminUser)}, nil
}

// stop shuts the embedded server down; a user-provided server is left alone.
func (b *bus) stop() {
	if b != nil && b.embedded != nil {
		b.embedded.Shutdown()
	}
}
