package app

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	vagrantv1 "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/libs/platform/service"
	vgrpc "github.com/plinth-dev/plinth/services/vagrant-server/internal/grpc"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/joboutput"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/sessions"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/store"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// Open assembles the vagrant-server: its database (the job queue's tables before its own, as
// job output references them), the job queue and the job-output listener, its events, the
// Vagrant API behind its protocol and token guard, and the job reaper; Run serves.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (_ *service.Service, err error) {
	s, err := service.New(service.Options{Name: "vagrant-server", Logger: log, Admin: cfg.Admin, ClientLimits: cfg.ClientLimits})
	if err != nil {
		return nil, err
	}
	defer s.CloseOnError(&err)

	pool, err := s.Postgres(ctx, cfg.DatabaseURL, store.Schema, store.Migrations, jobqueue.Migrations())
	if err != nil {
		return nil, err
	}
	queue, err := jobqueue.New(ctx, pool, jobqueue.Options{
		AckTimeout: cfg.JobAckTimeout, HeartbeatTimeout: cfg.JobHeartbeatTimeout, RunnerTimeout: cfg.RunnerTimeout,
		MaxUnfinishedPerOwner: cfg.MaxQueuedJobs, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("start the job queue: %w", err)
	}
	s.Defer("job queue", func(context.Context) error { queue.Close(); return nil })
	notices, err := joboutput.Listen(ctx, pool, log)
	if err != nil {
		return nil, fmt.Errorf("listen for job output: %w", err)
	}
	s.Defer("job output listener", func(context.Context) error { notices.Close(); return nil })
	pub, err := s.Publisher(ctx, cfg.NATS, events.PublisherConfig{
		Service: "vagrant-server", Stream: events.StreamOf(&eventsv1.JobStateChanged{}), Pool: pool,
	})
	if err != nil {
		return nil, err
	}
	// Plinth's own RunnerService takes Plinth tokens, checked with auth as every Plinth
	// service checks them; the Vagrant API keeps vagrant-server's own tokens.
	verifier, err := s.AuthVerifier(cfg.AuthAddr, pub.JetStream, authn.Options{})
	if err != nil {
		return nil, err
	}
	st := store.New(pool)
	// Vagrant tokens for Plinth sessions: signed as every Vagrant token, checked against the
	// database at every call, revoked by auth's token.revoked events.
	// Every token a user or token owns — session, login, invite — counts against one quota.
	quota := tokens.Quota{MaxPerOwner: cfg.MaxTokens}
	issuer := tokens.NewIssuer(st, st, nil)
	issuer.LimitTokens(quota)
	sess := sessions.NewService(st, issuer, sessions.Options{MaxTTL: cfg.SessionTokenTTL, Quota: quota, Logger: log})
	issuer.CheckSessionsWith(sess.Check)
	// The calls running on session tokens, ended when auth revokes their Plinth token, and on
	// login tokens a Plinth user owns, ended with the user's access.
	calls := &authn.Lifetimes{}
	api := vgrpc.NewServer(vgrpc.Options{
		Registry:      registry.NewService(st, registry.Options{}),
		Tokens:        issuer,
		Jobs:          queue,
		Output:        st,
		OutputNotices: notices,
		Logger:        log,
		Version:       version(),
		Lifetime:      s.Lifetime(), // long-lived job and log streams end when shutdown begins
		JobsKept:      cfg.JobsKept,
		PlinthAuth:    verifier.Authenticate,
		Calls:         calls,
	})
	srv, err := s.GRPC(cfg.GRPC, server.Options{Authenticate: api.Authenticate, AuthExempt: vgrpc.AuthExempt(),
		CheckRequest: vgrpc.CheckRequest})
	if err != nil {
		return nil, err
	}
	vagrant.RegisterVagrantServer(srv.GRPC(), api)
	vagrantv1.RegisterRunnerServiceServer(srv.GRPC(), api.Runners())
	vagrantv1.RegisterSessionTokenServiceServer(srv.GRPC(), api.SessionTokens(sess))

	// A revocation must reach the database even when every replica was down as it was
	// published: each replica reads back at least as far as a session token can live.
	catchUp := max(cfg.SessionTokenTTL, time.Hour)
	if cfg.SessionTokenTTL == 0 {
		catchUp = 7 * 24 * time.Hour
	}
	s.Go("session token revocations", func(ctx context.Context) error {
		sessions.WatchRevocations(ctx, pub.JetStream, st, issuer, func(r sessions.Revoked) {
			if r.PlinthTokenID != "" {
				calls.End(r.PlinthTokenID)
			}
			if r.UserWide {
				issuer.ForgetUser(r.UserID)
				calls.End(tokens.UserKey(r.UserID))
			}
		}, catchUp, log)
		return nil
	})
	s.Every("session token purge", 10*time.Minute, func(ctx context.Context) error { return sess.Purge(ctx, catchUp) })

	s.Go("job reaper", jobqueue.NewReaper(queue, cfg.JobReapInterval).Run)
	return s, nil
}

// version is the module version this binary was built from, when it is a release (semver,
// which GetVersionInfo promises); empty otherwise, which upstream clients accept.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || !strings.HasPrefix(bi.Main.Version, "v") {
		return ""
	}
	return strings.TrimPrefix(bi.Main.Version, "v")
}
