package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"

	authv1 "github.com/plinth-dev/plinth/libs/api/api/services/auth/v1"
	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/libs/platform/service"
	authgrpc "github.com/plinth-dev/plinth/services/auth/internal/grpc"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
	"github.com/plinth-dev/plinth/services/auth/internal/sso"
	"github.com/plinth-dev/plinth/services/auth/internal/store"
)

// Open assembles the auth service: its database, its events, the identity rules, the first
// user, the gRPC services and the purge job; Run serves. stdout receives the generated first
// admin password, once, outside the JSON log.
func Open(ctx context.Context, cfg Config, log *slog.Logger, stdout io.Writer) (_ *service.Service, err error) {
	s, err := service.New(service.Options{Name: "auth", Logger: log, Admin: cfg.Admin, ClientLimits: cfg.ClientLimits})
	if err != nil {
		return nil, err
	}
	defer s.CloseOnError(&err)

	pool, err := s.Postgres(ctx, cfg.DatabaseURL, store.Schema, store.Migrations)
	if err != nil {
		return nil, err
	}
	_, err = s.Publisher(ctx, cfg.NATS, events.PublisherConfig{
		Service: "auth", Stream: events.StreamOf(&eventsv1.TokenRevoked{}), Pool: pool,
	})
	if err != nil {
		return nil, err
	}
	st := store.New(pool)
	svc, err := identity.NewService(st, cfg.identityOptions(log))
	if err != nil {
		return nil, err
	}
	if err := bootstrap(ctx, svc, cfg.AdminPassword, log, stdout); err != nil {
		return nil, err
	}
	signIn, err := cfg.signIn(st, svc, log)
	if err != nil {
		return nil, err
	}
	clients, err := authgrpc.NewClientAddress(cfg.TrustedProxies)
	if err != nil {
		return nil, err
	}
	srv, err := s.GRPC(cfg.GRPC, server.Options{})
	if err != nil {
		return nil, err
	}
	register(srv, svc, signIn, clients, cfg, log)
	gw, err := gatewayServer(s, cfg)
	if err != nil {
		return nil, err
	}
	if gw != nil {
		register(gw, svc, signIn, authgrpc.GatewayClientAddress(), cfg, log)
	}

	s.Every("purge", cfg.PurgeInterval, func(ctx context.Context) error {
		return purge(ctx, st, cfg.Lockout().Forget, log)
	})
	return s, nil
}

// register serves auth's services on srv, finding a login's address with clients.
func register(srv *server.Server, svc *identity.Service, signIn *sso.Service, clients *authgrpc.ClientAddress, cfg Config, log *slog.Logger) {
	seed := authgrpc.NewAuthServer(svc, clients, log)
	authpb.RegisterAuthServiceServer(srv.GRPC(), seed)
	authv1.RegisterAuthServiceServer(srv.GRPC(), authgrpc.NewAuthV1Server(seed))
	adminpb.RegisterAdminServiceServer(srv.GRPC(), authgrpc.NewAdminServer(svc, log))
	adminpb.RegisterOIDCServiceServer(srv.GRPC(), authgrpc.NewOIDCServer(signIn, clients, log))
	authv3.RegisterAuthorizationServer(srv.GRPC(), authgrpc.NewExtAuthzServer(svc, cfg.publicPaths(), log))
}

// bootstrap creates the first user, admin, when there are none. A generated password goes to
// stdout exactly once, never to the (possibly shipped) JSON log.
func bootstrap(ctx context.Context, svc *identity.Service, password string, log *slog.Logger, stdout io.Writer) error {
	generated, created, err := svc.Bootstrap(ctx, password)
	if err != nil {
		return fmt.Errorf("create first user: %w", err)
	}
	if created {
		log.Info("created the first user", "username", "admin", "password_generated", generated != "")
		if generated != "" {
			fmt.Fprintf(stdout, "\nFirst user created: admin / %s\nThis password is shown once; change it with `auth users passwd admin`.\n\n", generated)
		}
	}
	return nil
}

// purge deletes tokens no cache can still hold (expired over an hour ago) and failure
// counters idle for longer than the lockout forgets them.
func purge(ctx context.Context, st *store.Store, forget time.Duration, log *slog.Logger) error {
	now := time.Now()
	n, err := st.Purge(ctx, now.Add(-time.Hour), now.Add(-forget))
	if n > 0 {
		log.Info("purged expired tokens and stale counters", "rows", n)
	}
	return err
}
