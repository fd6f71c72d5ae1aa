package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// Postgres are. Unlike endpoints.json it keeps a password that a PLINTH_DATABASE_URL holds (the
// services need it; the launcher's own URLs name a pass file instead), so it is private to the
// owner (mode 0600) and removed when the launcher exits.
const InfraFile = "infra.json"

// RunInfra is `plinth-up -infra-only`: it holds the runtime home, starts (or checks) NATS and
// Postgres exactly as Run does, builds every service binary into HOME/bin, writes
// HOME/infra.json and answers /readyz on InfraAdminPort until ctx ends or a signal arrives.
// It starts no service: `plinth-up -run <binary>` does, one process each (the Tiltfile).
func RunInfra(ctx context.Context, c Config, interrupts <-chan os.Signal) error {
	return withCancel(ctx, func(ctx context.Context, cancel func()) error { return runInfra(ctx, cancel, c, interrupts) })
}

func runInfra(ctx context.Context, cancel func(), c Config, interrupts <-chan os.Signal) (err error) {
	s, err := openSession(c, cancel, interrupts, InfraFile)
	if err != nil {
		return err
	}
	defer s.close(&err)

	admin := loopback(InfraAdminPort + c.PortOffset)
	lis, err := net.Listen("tcp", admin)
	if err != nil {
		return fmt.Errorf("listen on %s for -infra-only's /readyz: %w; stop what listens there or use -port-offset", admin, err)
	}
	defer lis.Close()

	// Installed here, once for all the -run that follow: they then find what they need.
	if _, err := s.settleNeeds(ctx, c, foundSpecs(s.found)); err != nil {
		return err
	}
	infra, err := s.startInfra(ctx, c)
	if err != nil {
		return err
	}
	// One build of everything shares the work between services; each -run then finds its
	// binary fresh (the Tiltfile rebuilds only the one whose code changes).
	if err := s.build(ctx, c); err != nil {
		return err
	}
	// The kube build outlives the -run of kaas (an exec): this launcher owns it.
	if err := s.startKubeBuild(c); err != nil {
		return err
	}
	// The dev Ceph too: -run stats and -run cnpgi-plugin read HOME/ceph.json.
	if err := s.startDevCeph(ctx, c); err != nil {
		return err
	}
	if err := writeInfra(c.Home, infra); err != nil {
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
	s.self("infrastructure ready (http://%s/readyz); run each service with: %s -run <binary>", admin, os.Args[0])
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
func writeInfra(home string, r Infra) error {
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
	var r Infra
	if err := json.Unmarshal(data, &r); err != nil || r.DatabaseURL == "" || r.NATSURL == "" {
		return Infra{}, fmt.Errorf("%s is not what -infra-only writes (%v): restart it", path, err)
	}
	return r, nil
}
