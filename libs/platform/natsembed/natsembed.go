// Package natsembed runs an in-process NATS server with JetStream for local runs and tests.
package natsembed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// readyTimeout bounds how long Start waits for the listener and JetStream recovery.
const readyTimeout = 10 * time.Second

// Options configures Start.
type Options struct {
	// Host to listen on; empty means 127.0.0.1.
	Host string
	// Port to listen on; 0 picks a random free port (see Server.Port).
	Port int
	// StoreDir keeps JetStream streams and consumers. Required: starting again with
	// the same StoreDir (and Port) restarts the same server with its streams.
	StoreDir string
	// Logger receives the server's log, adapted to slog; nil keeps the server silent.
	Logger *slog.Logger
	// Users, when set, are the only clients the server accepts: a client without credentials,
	// or with a wrong password, is refused, and each user may publish and subscribe only
	// where its permissions allow. Empty accepts any client (the tests' server).
	Users []User
}

// User is a client the server accepts and what it may do; the allow lists are NATS subjects
// with wildcards. A subject in neither list is refused for that user.
type User struct {
	Name      string
	Password  string
	Publish   []string
	Subscribe []string
}

// Server is a running embedded NATS server.
type Server struct {
	ns *server.Server
}

// Start starts the server and waits until it accepts client connections.
func Start(o Options) (*Server, error) {
	if o.StoreDir == "" {
		return nil, errors.New("natsembed: Options.StoreDir is required (JetStream keeps its streams there)")
	}
	storeDir, err := filepath.Abs(o.StoreDir)
	if err != nil {
		return nil, fmt.Errorf("natsembed: store dir: %w", err)
	}
	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := o.Port
	if port > 0 {
		// A taken port would otherwise only surface as a ready timeout.
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return nil, fmt.Errorf("natsembed: cannot listen on %s (another NATS server running?): %w",
				net.JoinHostPort(host, strconv.Itoa(port)), err)
		}
		_ = l.Close()
	}
	if port == 0 {
		port = server.RANDOM_PORT // in server.Options, 0 would mean the default 4222
	}
	opts := &server.Options{
		ServerName: "plinth-embedded",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   storeDir,
		// The embedding process owns signal handling and shutdown.
		NoSigs: true,
		NoLog:  o.Logger == nil,
	}
	users, err := serverUsers(o.Users)
	if err != nil {
		return nil, err
	}
	opts.Users = users
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsembed: configure server: %w", err)
	}
	if o.Logger != nil {
		ns.SetLoggerV2(slogAdapter{log: o.Logger}, o.Logger.Enabled(context.Background(), slog.LevelDebug), false, false)
	}
	go ns.Start()
	if !ns.ReadyForConnections(readyTimeout) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("natsembed: server on %s not ready within %s "+
			"(is the port in use, or is %s locked by another server?)",
			net.JoinHostPort(host, strconv.Itoa(o.Port)), readyTimeout, storeDir)
	}
	if !ns.JetStreamEnabled() {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("natsembed: JetStream did not start (store dir %s)", storeDir)
	}
	return &Server{ns: ns}, nil
}

// ClientURL returns the nats:// URL clients connect to.
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// Port returns the TCP port the server listens on (the one picked when Options.Port was 0).
func (s *Server) Port() int {
	if a, ok := s.ns.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// Shutdown stops the server and waits until it has stopped. Safe to call twice.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

// serverUsers turns Users into the server's authorization, refusing a user without a name or
// password (a blank password would let anyone in under that name) or named twice.
func serverUsers(in []User) ([]*server.User, error) {
	if len(in) == 0 {
		return nil, nil // an empty, non-nil list would make the server refuse every client
	}
	seen := map[string]bool{}
	out := make([]*server.User, 0, len(in))
	for _, u := range in {
		switch {
		case u.Name == "":
			return nil, errors.New("natsembed: a user without a name")
		case u.Password == "":
			return nil, fmt.Errorf("natsembed: user %s has no password", u.Name)
		case seen[u.Name]:
			return nil, fmt.Errorf("natsembed: user %s is listed twice", u.Name)
		}
		seen[u.Name] = true
		out = append(out, &server.User{Username: u.Name, Password: u.Password, Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: slices.Clone(u.Publish)},
			Subscribe: &server.SubjectPermission{Allow: slices.Clone(u.Subscribe)},
		}})
	}
	return out, nil
}
