package instance

import (
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	walv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/wal/v1"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/errmap"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// WALServer implements cnpgi.wal.v1.WAL: the instance manager's archive_command and
// restore_command, plus Status and SetFirstRequired.
type WALServer struct {
	walv1.UnimplementedWALServer
	svc    *wal.Service
	stores *stores.Registry
	opts   WALOptions
	log    *slog.Logger
	// declined holds the clusters (and reasons) whose segments this plugin was asked to
	// archive and left alone: the first is logged at Info, so that an operator sees the
	// decision once, the rest at Debug.
	declined sync.Map
}

// WALOptions describe the instance the WAL service works for.
type WALOptions struct {
	// Plugin is the plugin name clusters enable.
	Plugin string
	// Timeout bounds each call (the instance manager sets no deadline on unix sockets).
	Timeout time.Duration
	// DataDirs confine archive sources and restore destinations: the instance's PGDATA
	// first (relative paths resolve against it), then any other data directories served.
	DataDirs []string
	// Instance is this instance's pod name: with the cluster's status it says whether a
	// standby can stream (the end-of-WAL flag).
	Instance string
}

// NewWALServer serves svc for clusters that enable o.Plugin.
func NewWALServer(svc *wal.Service, stores *stores.Registry, o WALOptions, log *slog.Logger) *WALServer {
	return &WALServer{svc: svc, stores: stores, opts: o, log: log}
}

// GetCapabilities lists the four WAL RPCs, all implemented.
func (s *WALServer) GetCapabilities(context.Context, *walv1.WALCapabilitiesRequest) (*walv1.WALCapabilitiesResult, error) {
	resp := &walv1.WALCapabilitiesResult{}
	for _, t := range []walv1.WALCapability_RPC_Type{
		walv1.WALCapability_RPC_TYPE_ARCHIVE_WAL, walv1.WALCapability_RPC_TYPE_RESTORE_WAL,
		walv1.WALCapability_RPC_TYPE_STATUS, walv1.WALCapability_RPC_TYPE_SET_FIRST_REQUIRED,
	} {
		resp.Capabilities = append(resp.Capabilities, &walv1.WALCapability{
			Type: &walv1.WALCapability_Rpc{Rpc: &walv1.WALCapability_RPC{Type: t}},
		})
	}
	return resp, nil
}

// Archive stores the segment at source_file_name. check_empty_wal_archive is passed on
// with its presence: absent means an older operator (see wal.ArchiveRequest).
func (s *WALServer) Archive(ctx context.Context, req *walv1.WALArchiveRequest) (*walv1.WALArchiveResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	start := time.Now()
	c, err := cluster.Parse(req.GetClusterDefinition())
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	// Decided before the store is resolved: a cluster that archives elsewhere costs nothing.
	if archives, why, err := c.ArchivesWAL(s.opts.Plugin); err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	} else if !archives {
		// The instance manager asks every plugin; another archiver (or none) has the
		// segment. Success, so that PostgreSQL does not retry it here forever.
		level := slog.LevelDebug
		if _, seen := s.declined.LoadOrStore(c.Metadata.Namespace+"/"+c.Metadata.Name+"\x00"+why, true); !seen {
			level = slog.LevelInfo
		}
		s.log.Log(ctx, level, "not this cluster's WAL archiver: segments left alone", "cluster", c.Metadata.Name,
			"namespace", c.Metadata.Namespace, "wal", baseName(req.GetSourceFileName()), "why", why)
		return &walv1.WALArchiveResult{}, nil
	}
	ct, err := c.ArchiveTarget(s.opts.Plugin)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	t, err := wal.Resolve(ctx, s.stores, ct)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	err = s.svc.Archive(ctx, t, wal.ArchiveRequest{
		SourcePath: req.GetSourceFileName(), DataDirs: s.opts.DataDirs,
		CheckEmpty: req.CheckEmptyWalArchive, SkipEmptyCheck: c.SkipEmptyWALArchiveCheck(),
	})
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err, "store", t.Store.Name, "server", t.Server, "source", input.Quote(req.GetSourceFileName()))
	}
	s.log.InfoContext(ctx, "archived WAL file", "wal", baseName(req.GetSourceFileName()), "store", t.Store.Name,
		"server", t.Server, "ms", time.Since(start).Milliseconds())
	return &walv1.WALArchiveResult{}, nil
}

// Restore writes source_wal_name to destination_file_name. mode 0 (older operators) is
// recovery.
func (s *WALServer) Restore(ctx context.Context, req *walv1.WALRestoreRequest) (*walv1.WALRestoreResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	c, t, err := s.target(ctx, req.GetClusterDefinition(), true)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	mode := wal.RestoreRecovery
	switch req.GetMode() {
	case walv1.WALRestoreRequest_MODE_UNSPECIFIED, walv1.WALRestoreRequest_MODE_RECOVERY:
	case walv1.WALRestoreRequest_MODE_REWIND:
		mode = wal.RestoreRewind
	default:
		return nil, errmap.ToStatus(ctx, s.log, &input.Error{Field: "mode", Reason: "unknown restore mode " + req.GetMode().String()})
	}
	err = s.svc.Restore(ctx, t, wal.RestoreRequest{
		Name: req.GetSourceWalName(), Destination: req.GetDestinationFileName(), DataDirs: s.opts.DataDirs, Mode: mode,
		StreamingAvailable: c.StreamingAvailable(s.opts.Instance),
	})
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err, "store", t.Store.Name, "server", t.Server, "wal", input.Quote(req.GetSourceWalName()))
	}
	return &walv1.WALRestoreResult{}, nil
}

// Status reports the first and last archived segments as the store holds them, with counts
// in additional_information.
func (s *WALServer) Status(ctx context.Context, req *walv1.WALStatusRequest) (*walv1.WALStatusResult, error) {
	_, t, err := s.target(ctx, req.GetClusterDefinition(), false)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	st, err := s.svc.Status(ctx, t)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err, "store", t.Store.Name, "server", t.Server)
	}
	info := map[string]string{
		"objectStore": t.Store.Name, "serverName": t.Server,
		"segments": itoa(st.Segments), "storedBytes": itoa(st.Bytes),
	}
	// Without the catalog (it does not answer) its count is unknown, not 0; what it has yet
	// to record is said instead.
	if st.CatalogKnown {
		info["catalogSegments"] = itoa(st.CatalogSegments)
	}
	if st.CatalogWaiting > 0 {
		info["catalogWaiting"] = itoa(int64(st.CatalogWaiting))
	}
	if st.FirstRequired != "" {
		info["firstRequiredWal"] = st.FirstRequired
	}
	if !st.LastArchivedAt.IsZero() {
		info["lastArchivedAt"] = st.LastArchivedAt.UTC().Format(time.RFC3339)
	}
	return &walv1.WALStatusResult{FirstWal: st.FirstWAL, LastWal: st.LastWAL, AdditionalInformation: info}, nil
}

// SetFirstRequired records the oldest WAL segment a backup still needs.
func (s *WALServer) SetFirstRequired(ctx context.Context, req *walv1.SetFirstRequiredRequest) (*walv1.SetFirstRequiredResult, error) {
	_, t, err := s.target(ctx, req.GetClusterDefinition(), false)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	if err := s.svc.SetFirstRequired(ctx, t, req.GetFirstRequiredWal()); err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err, "store", t.Store.Name, "server", t.Server)
	}
	return &walv1.SetFirstRequiredResult{}, nil
}

// target resolves the cluster's plugin parameters into a store and server name: where its
// WAL goes or, restoring, comes from.
func (s *WALServer) target(ctx context.Context, definition []byte, restore bool) (*cluster.Cluster, wal.Target, error) {
	c, err := cluster.Parse(definition)
	if err != nil {
		return nil, wal.Target{}, err
	}
	pick := c.ArchiveTarget
	if restore {
		pick = c.RestoreTarget
	}
	ct, err := pick(s.opts.Plugin)
	if err != nil {
		return nil, wal.Target{}, err
	}
	t, err := wal.Resolve(ctx, s.stores, ct)
	return c, t, err
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func baseName(p string) string { return filepath.Base(p) }
