package instance

import (
	"context"
	"log/slog"
	"regexp"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	cnpgiv1 "github.com/plinth-dev/plinth/libs/api/plinth/cnpgi/v1"
	"github.com/plinth-dev/plinth/libs/platform/input"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/history"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/errmap"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/instance/metrics"
)

// CatalogReader is what the catalog view reads: the summaries Metrics and the Operator's
// status report (package history) and the base backups' records (package catalog).
type CatalogReader interface {
	Servers(ctx context.Context, store string) ([]history.Server, error)
	Find(ctx context.Context, store, server string) (history.Summary, bool, error)
	Backups(ctx context.Context, store, server string) ([]backup.Record, error)
}

// CatalogServer implements plinth.cnpgi.v1.CatalogService: a read-only view of the catalog,
// the figures the Metrics service reports, per server.
type CatalogServer struct {
	cnpgiv1.UnimplementedCatalogServiceServer
	catalog      CatalogReader
	defaultStore string
	failures     *metrics.Failures
	log          *slog.Logger
}

// NewCatalogServer answers from catalog; GetServer without an object store reads
// defaultStore; failures are the archive failures this process counted.
func NewCatalogServer(catalog CatalogReader, defaultStore string, failures *metrics.Failures, log *slog.Logger) *CatalogServer {
	return &CatalogServer{catalog: catalog, defaultStore: defaultStore, failures: failures, log: log}
}

// storeNameRE is the store configuration's rule for store names (stores.ParseFile).
var storeNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$`)

func checkStoreName(field, name string) error {
	if err := input.String(field, name, 63); err != nil {
		return err
	}
	if name != "" && !storeNameRE.MatchString(name) {
		return input.Invalid(field, "%s must be 1-63 characters of a-z, 0-9, '.', '_' and '-', starting and ending with a letter or digit", input.Quote(name))
	}
	return nil
}

// ListServers lists every server the catalog holds WAL or base backups of.
func (s *CatalogServer) ListServers(ctx context.Context, req *cnpgiv1.ListServersRequest) (*cnpgiv1.ListServersResponse, error) {
	if err := checkStoreName("object_store", req.GetObjectStore()); err != nil {
		return nil, err
	}
	servers, err := s.catalog.Servers(ctx, req.GetObjectStore())
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err, "rpc", "ListServers")
	}
	resp := &cnpgiv1.ListServersResponse{Servers: make([]*cnpgiv1.Server, 0, len(servers))}
	for _, sv := range servers {
		resp.Servers = append(resp.Servers, s.server(sv.Store, sv.Server, sv.Summary))
	}
	return resp, nil
}

// GetServer answers one server's summary and base backups; NotFound when the catalog holds
// nothing of it.
func (s *CatalogServer) GetServer(ctx context.Context, req *cnpgiv1.GetServerRequest) (*cnpgiv1.GetServerResponse, error) {
	if err := checkStoreName("object_store", req.GetObjectStore()); err != nil {
		return nil, err
	}
	if err := input.Required("server_name", req.GetServerName(), 128); err != nil {
		return nil, err
	}
	if p := cluster.ServerNameProblem(req.GetServerName()); p != "" {
		return nil, input.Invalid("server_name", "%s", p)
	}
	store := req.GetObjectStore()
	if store == "" {
		if store = s.defaultStore; store == "" {
			return nil, input.Invalid("object_store", "is required: the plugin has no default store")
		}
	}
	server := req.GetServerName()
	attrs := []any{"rpc", "GetServer", "store", store, "server", server}
	sum, known, err := s.catalog.Find(ctx, store, server)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err, attrs...)
	}
	if !known {
		// Why NotFound: the name is well formed, the catalog has simply never seen it (no
		// archived WAL, no backup); retrying the same call cannot help until it archives.
		return nil, status.Errorf(codes.NotFound, "the catalog holds no WAL or base backup of server %s in object store %s",
			input.Quote(server), input.Quote(store))
	}
	records, err := s.catalog.Backups(ctx, store, server)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err, attrs...)
	}
	out := s.server(store, server, sum)
	for _, r := range records {
		out.BaseBackups = append(out.BaseBackups, baseBackup(r))
	}
	return &cnpgiv1.GetServerResponse{Server: out}, nil
}

func (s *CatalogServer) server(store, server string, sum history.Summary) *cnpgiv1.Server {
	fail := s.failures.Get(store, server)
	out := &cnpgiv1.Server{
		ObjectStore: store, ServerName: server,
		Wal: &cnpgiv1.WALArchive{
			FirstWal: sum.FirstWAL, LastWal: sum.LastWAL, Segments: sum.Segments, StoredBytes: sum.StoredBytes,
			LastArchivedTime: stamp(sum.LastArchivedAt), FailedArchives: int64(fail.Count),
			LastFailedArchiveTime: stamp(fail.Last), LastFailedArchiveMessage: fail.Message,
		},
		CompletedBackups:         sum.Backups,
		LastSuccessfulBackupTime: stamp(sum.LastSuccessfulBackup),
		LastFailedBackupTime:     stamp(sum.LastFailedBackup),
	}
	if !sum.FirstRecoverabilityPoint.IsZero() {
		out.RecoveryWindow = &cnpgiv1.RecoveryWindow{
			StartTime: stamp(sum.FirstRecoverabilityPoint), EndTime: stamp(sum.LastArchivedAt), EndWal: sum.LastWAL,
		}
	}
	return out
}

func baseBackup(r backup.Record) *cnpgiv1.BaseBackup {
	b := &cnpgiv1.BaseBackup{
		BackupId: r.ID, BackupName: r.Name, Status: protoBackupStatus(r.Status),
		StartTime: stamp(r.BeginTime), EndTime: stamp(r.EndTime), BeginWal: r.BeginWAL, EndWal: r.EndWAL,
		Timeline: r.Timeline, SizeBytes: r.Size, StoredBytes: r.StoredSize, Instance: r.Instance, Error: r.Error,
	}
	if r.BeginLSN != 0 {
		b.BeginLsn = r.BeginLSN.String()
	}
	if r.EndLSN != 0 {
		b.EndLsn = r.EndLSN.String()
	}
	return b
}

func protoBackupStatus(s backup.Status) cnpgiv1.BackupStatus {
	switch s {
	case backup.StatusStarted:
		return cnpgiv1.BackupStatus_BACKUP_STATUS_STARTED
	case backup.StatusDone:
		return cnpgiv1.BackupStatus_BACKUP_STATUS_DONE
	case backup.StatusFailed:
		return cnpgiv1.BackupStatus_BACKUP_STATUS_FAILED
	}
	return cnpgiv1.BackupStatus_BACKUP_STATUS_UNSPECIFIED
}

// stamp is nil for the zero time ("none").
func stamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}
