package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	jobspb "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/storage/compression"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
	lvmdgrpc "github.com/plinth-dev/plinth/services/lvmd-agent/internal/grpc"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/inventory"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/store"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// Open assembles the agent: lvm and its device classes (every volume group must exist), the
// database and events, the inventory that turns volume changes into events, the backup
// jobs (recovering those a previous run left), the gRPC services on the socket and the
// optional mutual-TLS port, and the background loops; Run serves. cfg must be Resolved.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (_ *service.Service, err error) {
	s, err := service.New(service.Options{Name: "lvmd-agent", Logger: log, Admin: cfg.Admin, ClientLimits: cfg.ClientLimits})
	if err != nil {
		return nil, err
	}
	defer s.CloseOnError(&err)

	for _, w := range cfg.warnings {
		log.Warn("lvmd.yaml: a key has no effect", "detail", w)
	}
	m, err := newMetrics(s.Metrics())
	if err != nil {
		return nil, err
	}
	metadataOnly, _ := cfg.metadataOnly()
	runner := lvm.New(lvm.Options{Binary: cfg.LVM, MetadataOnly: metadataOnly, Timeout: cfg.CommandTimeout,
		Env: os.Environ(), Logger: log, Observe: m.observeLVM})
	lvmVersion, err := runner.Version(ctx)
	if err != nil {
		return nil, fmt.Errorf("lvm does not run (apt-get install lvm2; the agent needs root): %w", err)
	}
	log.Info("lvm", "version", lvmVersion, "metadata_only", metadataOnly)
	pool, err := s.Postgres(ctx, cfg.DatabaseURL, store.Schema, store.Migrations)
	if err != nil {
		return nil, err
	}
	_, err = s.Publisher(ctx, cfg.NATS, events.PublisherConfig{
		Service: "lvmd-agent", Stream: events.StreamOf(&eventsv1.NodeHeartbeat{}), Pool: pool,
	})
	if err != nil {
		return nil, err
	}
	st := store.New(pool)
	volumes := volume.New(volume.Options{Classes: cfg.classes, LVM: runner, Logger: log,
		Recorder: st.VolumeRecord(cfg.NodeName), Observe: m.observeClass})
	if err := volumes.CheckVolumeGroups(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.ConfigFile, err)
	}
	reporter := inventory.New(inventory.Options{Volumes: volumes, Publisher: st, Node: cfg.NodeName, Addresses: cfg.NodeAddresses,
		Poll: cfg.PollInterval, HeartbeatInterval: cfg.HeartbeatInterval, Version: version(), Logger: log})

	kind, _ := compression.ParseWritable(cfg.Compression)
	jobs := backup.New(backup.Options{Store: st, Volumes: volumes, LVM: runner, Node: cfg.NodeName, Owner: instanceID(),
		Compression: kind, Threads: cfg.CompressionThreads, PartSize: int64(cfg.PartSizeMiB) << 20, Concurrency: cfg.UploadConcurrency,
		Logger: log, Observe: m.observeJob})
	if err := jobs.Recover(ctx); err != nil {
		return nil, err
	}
	// Jobs write to the database: they stop (recording how they ended) before it closes.
	s.Defer("backup jobs", jobs.Close)

	tlsLis, err := listenTLS(s, cfg)
	if err != nil {
		return nil, err
	}
	srv, err := s.GRPC(cfg.GRPC, server.Options{})
	if err != nil {
		return nil, err
	}
	s3Default, err := cfg.s3Default()
	if err != nil {
		return nil, err
	}
	if s3Default != nil {
		if s3Default.Bucket == "" {
			s3Default.Bucket = discoverBucket(ctx, s3Default, log)
		}
		log.Info("default S3 store for requests that name no endpoint and no credentials", "endpoint", s3Default.Endpoint, "bucket", s3Default.Bucket)
	}
	lvmdgrpc.RegisterLVService(srv.GRPC(), lvmdgrpc.NewLVServer(volumes, jobs, s3Default, log))
	lvmdpb.RegisterVGServiceServer(srv.GRPC(), lvmdgrpc.NewVGServer(volumes, cfg.WatchInterval, s.Lifetime(), log))
	jobspb.RegisterJobServiceServer(srv.GRPC(), lvmdgrpc.NewJobServer(st, jobs, s3Default, cfg.NodeName, log))
	jobspb.RegisterVolumeServiceServer(srv.GRPC(), lvmdgrpc.NewVolumeServer(volumes, s3Default, log))
	if tlsLis != nil {
		s.Go("mutual TLS listener", serveTLS(srv, tlsLis, log))
	}
	s.Go("inventory", reporter.Run)
	s.Every("heartbeat", cfg.HeartbeatInterval, reporter.Heartbeat)
	s.Go("first heartbeat", func(ctx context.Context) error {
		if err := reporter.Heartbeat(ctx); err != nil && ctx.Err() == nil {
			log.Warn("first heartbeat failed; the next comes on schedule", "error", err)
		}
		return nil
	})
	return s, nil
}

// instanceID names this process as the owner of the jobs it runs.
func instanceID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b))
}

// version is the module version the binary was built from, "devel" in a workspace build.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
