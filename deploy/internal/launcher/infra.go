package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// InfraAdminPort is where `plinth-up -infra-only` answers /healthz and /readyz (shifted by the
// port offset), so that Tilt can wait for NATS and Postgres before it starts the services.
const InfraAdminPort = 7100

// InfraFile is the file inside the runtime home in which -infra-only tells -run where NATS and
// Postgres are. Unlike endpoints.json it keeps a password in the database URL (the services
// need it), so it is private to the owner (mode 0600) and removed when the launcher exits.
const InfraFile = "infra.json"

type infraRecord struct {
	DatabaseURL string `json:"database_url"`
	NATSURL     string `json:"nats_url"`
}

// RunInfra is `plinth-up -infra-only`: it holds the runtime home, starts (or checks) NATS and
// Postgres exactly as Run does, builds every service binary into HOME/bin, writes
// HOME/infra.json and answers /readyz on InfraAdminPort until ctx ends or a signal arrives.
// It starts no service: `plinth-up -run <binary>` does, one process each (the Tiltfile).
func RunInfra(ctx context.Context, c Config, interrupts <-chan os.Signal) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err := runInfra(ctx, cancel, c, interrupts)
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func runInfra(ctx context.Context, cancel func(), c Config, interrupts <-chan os.Signal) (err error) {
	found, err := Discover(c.Root)
	if err != nil {
		return err
	}
	con := NewConsole(c.Out, c.Color, nameWidth(found))
	self := con.Writer("plinth-up")
	defer self.Close()
	say := func(format string, args ...any) { fmt.Fprintf(self, format+"\n", args...) }

	if err := os.MkdirAll(c.Home, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", c.Home, err)
	}
	release, err := lockHome(c.Home)
	if err != nil {
		return err
	}
	defer release()
	infraPath := filepath.Join(c.Home, InfraFile)
	_ = os.Remove(infraPath) // left by a run that was killed
	defer func() { _ = os.Remove(infraPath) }()

	force, finished := make(chan struct{}), make(chan struct{})
	defer close(finished)
	go watchInterrupts(interrupts, cancel, force, finished, say)

	admin := loopback(InfraAdminPort + c.PortOffset)
	lis, err := net.Listen("tcp", admin)
	if err != nil {
		return fmt.Errorf("listen on %s for -infra-only's /readyz: %w; stop what listens there or use -port-offset", admin, err)
	}
	defer lis.Close()

	db, err := openDatabase(ctx, c, say, textLogger(con.Writer("postgres"), slog.LevelInfo), con.Writer("apt"))
	if err != nil {
		return err
	}
	defer say("stopped")
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if stopErr := db.stop(stopCtx); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stop private Postgres: %w", stopErr))
		}
	}()
	say("Postgres: %s (%s)", redact(db.url), db.describe)
	bus, err := startBus(c, say, textLogger(con.Writer("nats"), slog.LevelWarn))
	if err != nil {
		return err
	}
	defer bus.stop()
	say("NATS: %s (%s)", bus.url, bus.describe)

	// One build of everything shares the work between services; each -run then finds its
	// binary fresh (the Tiltfile rebuilds only the one whose code changes).
	if err := buildBinaries(ctx, c.Root, filepath.Join(c.Home, "bin"), found, con.Writer("go build")); err != nil {
		return err
	}
	if err := writeInfra(c.Home, infraRecord{DatabaseURL: db.url, NATSURL: bus.url}); err != nil {
		return err
	}
	srv := &http.Server{Handler: infraAdmin(), ReadHeaderTimeout: 5 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(lis) }()
	defer func() {
		shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutCtx)
	}()
	say("infrastructure ready (http://%s/readyz); run each service with: %s -run <binary>", admin, os.Args[0])
	select {
	case <-ctx.Done():
		return nil
	case err := <-serveErr:
		return fmt.Errorf("-infra-only's admin server stopped: %w", err)
	}
}

// infraAdmin answers the probes: the server only listens once NATS and Postgres are up.
func infraAdmin() http.Handler {
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }
	mux.HandleFunc("GET /healthz", ok)
	mux.HandleFunc("GET /readyz", ok)
	return mux
}

// writeInfra replaces HOME/infra.json atomically, readable by the owner only.
func writeInfra(home string, r infraRecord) error {
	return writeHomeJSON(home, InfraFile, r)
}

// readInfra reads what a running -infra-only wrote.
func readInfra(home string) (Infra, error) {
	path := filepath.Join(home, InfraFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Infra{}, fmt.Errorf("no %s: start `plinth-up -infra-only` with the same PLINTH_HOME first (Tilt's infra resource) and wait until it is ready", path)
	}
	if err != nil {
		return Infra{}, err
	}
	var r infraRecord
	if err := json.Unmarshal(data, &r); err != nil || r.DatabaseURL == "" || r.NATSURL == "" {
		return Infra{}, fmt.Errorf("%s is not what -infra-only writes (%v): restart it", path, err)
	}
	return Infra{DatabaseURL: r.DatabaseURL, NATSURL: r.NATSURL}, nil
}
