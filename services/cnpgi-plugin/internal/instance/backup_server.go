package instance

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	backupv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/backup/v1"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/errmap"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// The parameters a Backup (or ScheduledBackup) may set in spec.pluginConfiguration.parameters.
const (
	// backupParamStore sends this backup to another configured store than the cluster's
	// (the WAL it needs is copied along).
	backupParamStore = "objectStore"
	// backupParamCompression is gzip (default), zstd or none.
	backupParamCompression = "compression"
	// backupParamImmediate overrides spec.onlineConfiguration.immediateCheckpoint.
	backupParamImmediate = "immediateCheckpoint"
)

var backupParams = []string{backupParamStore, backupParamCompression, backupParamImmediate}

// BackupServer implements cnpgi.backup.v1.Backup: online base backups of the instance the
// plugin runs beside.
type BackupServer struct {
	backupv1.UnimplementedBackupServer
	svc      *backup.Service
	stores   *stores.Registry
	plugin   string
	version  string
	instance string
	log      *slog.Logger
}

// NewBackupServer serves svc for clusters that enable plugin; instance names the backed-up
// pod in the catalog and results.
func NewBackupServer(svc *backup.Service, stores *stores.Registry, plugin, version, instance string, log *slog.Logger) *BackupServer {
	return &BackupServer{svc: svc, stores: stores, plugin: plugin, version: version, instance: instance, log: log}
}

// GetCapabilities lists the one Backup RPC.
func (s *BackupServer) GetCapabilities(context.Context, *backupv1.BackupCapabilitiesRequest) (*backupv1.BackupCapabilitiesResult, error) {
	return &backupv1.BackupCapabilitiesResult{Capabilities: []*backupv1.BackupCapability{{
		Type: &backupv1.BackupCapability_Rpc{Rpc: &backupv1.BackupCapability_RPC{Type: backupv1.BackupCapability_RPC_TYPE_BACKUP}},
	}}}, nil
}

// backupObject is the part of a CloudNativePG Backup the plugin reads.
type backupObject struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Online              *bool `json:"online"`
		OnlineConfiguration *struct {
			ImmediateCheckpoint *bool `json:"immediateCheckpoint"`
			WaitForArchive      *bool `json:"waitForArchive"`
		} `json:"onlineConfiguration"`
	} `json:"spec"`
}

// Backup takes an online base backup into the cluster's store, or into the store the
// Backup's own parameters name.
func (s *BackupServer) Backup(ctx context.Context, req *backupv1.BackupRequest) (*backupv1.BackupResult, error) {
	r, err := s.request(ctx, req)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	res, err := s.svc.TakeAndRetain(ctx, r.Request, r.Retention)
	s.reportWindow(ctx, r, res, err)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err, "store", r.Target.Store.Name, "server", r.Target.Server, "backup", input.Quote(r.Name))
	}
	in := res.Info
	out := &backupv1.BackupResult{
		BackupId: in.ID, BackupName: in.Name, StartedAt: in.BeginTime.Unix(), StoppedAt: in.EndTime.Unix(),
		BeginWal: in.BeginWAL, EndWal: in.EndWAL, BeginLsn: in.BeginLSN.String(), EndLsn: in.EndLSN.String(),
		BackupLabelFile: []byte(in.Label), TablespaceMapFile: []byte(res.TablespaceMap), InstanceId: s.instance, Online: true,
		Metadata: map[string]string{
			"pluginName": s.plugin, "pluginVersion": s.version, "objectStore": r.Target.Store.Name, "serverName": r.Target.Server,
			"timeline": strconv.FormatUint(uint64(in.Timeline), 10), "systemIdentifier": in.SystemID,
			"compression": string(res.Compression), "size": strconv.FormatInt(in.Size, 10),
			"storedSize": strconv.FormatInt(res.StoredSize, 10), "walCopied": strconv.Itoa(res.WALCopied),
		},
	}
	retentionMetadata(res.Retention, out.Metadata)
	return out, nil
}

// retentionMetadata reports the retention run that followed the backup in its metadata
// (CloudNativePG keeps it in the Backup's status): the policy, then either what was deleted
// and the recovery window, or retentionError.
func retentionMetadata(r *backup.Retained, md map[string]string) {
	if r == nil {
		return
	}
	md["retentionPolicy"] = r.Policy.Spec()
	if r.Err != nil {
		md["retentionError"] = errmap.PublicMessage(r.Err)
		return
	}
	md["backupsDeleted"] = strconv.Itoa(len(r.Report.Deleted))
	md["walDeleted"] = strconv.Itoa(r.Report.WALDeleted)
	if !r.Report.FirstRecoverabilityPoint.IsZero() {
		md["firstRecoverabilityPoint"] = r.Report.FirstRecoverabilityPoint.UTC().Format(time.RFC3339)
	}
	if !r.Report.LastSuccessful.IsZero() {
		md["lastSuccessfulBackupTime"] = r.Report.LastSuccessful.UTC().Format(time.RFC3339)
	}
}

// backupCall is a validated Backup call: the backup, and the cluster's retention policy.
type backupCall struct {
	backup.Request
	// Retention is applied after the backup succeeds; nil without a retentionPolicy.
	Retention *backup.Policy
	// ObjectStore is the ObjectStore resource (barmanObjectName) the backup goes to, in the
	// Cluster's namespace; "" when it goes to a store of the plugin's configuration.
	ObjectStore, Namespace string
}

// reportWindow writes the server's recovery window into the status of the ObjectStore the
// backup went to, as plugin-barman-cloud does after each backup: after a success the first
// recoverability point and the last successful backup as the store now holds them (after
// retention), after a failure the time it failed. A status that cannot be written is logged:
// the backup's own result stands.
func (s *BackupServer) reportWindow(ctx context.Context, r backupCall, res *backup.Result, backupErr error) {
	windows := s.stores.RecoveryWindows()
	if r.ObjectStore == "" || windows == nil {
		return
	}
	var set func(*stores.RecoveryWindow)
	if backupErr != nil {
		failed := stores.At(time.Now())
		set = func(w *stores.RecoveryWindow) { w.LastFailedBackupTime = failed }
	} else {
		first, last, err := windowAfter(ctx, r, res)
		if err != nil {
			s.log.WarnContext(ctx, "the recovery window could not be read from the store: the ObjectStore's status is not updated",
				"objectStore", r.ObjectStore, "namespace", r.Namespace, "server", r.Target.Server, "error", errmap.PublicMessage(err))
			return
		}
		set = func(w *stores.RecoveryWindow) {
			w.FirstRecoverabilityPoint, w.LastSuccessfulBackupTime = stores.At(first), stores.At(last)
		}
	}
	if err := windows.UpdateRecoveryWindow(ctx, r.Namespace, r.ObjectStore, r.Target.Server, set); err != nil {
		s.log.WarnContext(ctx, "the ObjectStore's status.serverRecoveryWindow could not be updated",
			"objectStore", r.ObjectStore, "namespace", r.Namespace, "server", r.Target.Server, "error", err)
	}
}

// windowAfter is the recovery window after a successful backup: the retention run's when one
// ran, else the store's backups as listed now.
func windowAfter(ctx context.Context, r backupCall, res *backup.Result) (first, last time.Time, err error) {
	if rt := res.Retention; rt != nil && rt.Err == nil && !rt.Report.FirstRecoverabilityPoint.IsZero() {
		return rt.Report.FirstRecoverabilityPoint, rt.Report.LastSuccessful, nil
	}
	list, err := backup.List(ctx, r.Target.Store.Store, r.Target.Server)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	first, last = backup.WindowOf(list)
	return first, last, nil
}

// request validates the call and resolves where the backup goes.
func (s *BackupServer) request(ctx context.Context, req *backupv1.BackupRequest) (backupCall, error) {
	c, err := cluster.Parse(req.GetClusterDefinition())
	if err != nil {
		return backupCall{}, err
	}
	ct, err := c.ArchiveTarget(s.plugin)
	if err != nil {
		return backupCall{}, err
	}
	r, err := s.backupRequest(ctx, req, ct)
	if err != nil {
		return backupCall{}, err
	}
	call := backupCall{Request: r}
	if ct.BarmanObject != "" && req.GetParameters()[backupParamStore] == "" {
		call.ObjectStore, call.Namespace = ct.BarmanObject, ct.Namespace
	}
	if ct.RetentionPolicy != "" {
		// Validation refuses a bad policy; a cluster the operator never validated gets told here.
		p, err := backup.ParsePolicySpec(ct.RetentionPolicy)
		if err != nil {
			return backupCall{}, &input.Error{Field: "cluster_definition.spec.plugins.parameters." + cluster.ParamRetentionPolicy, Reason: errmap.PublicMessage(err)}
		}
		call.Retention = &p
	}
	return call, nil
}

// backupRequest resolves the backup itself, for the cluster's archive target ct.
func (s *BackupServer) backupRequest(ctx context.Context, req *backupv1.BackupRequest, ct cluster.Target) (backup.Request, error) {
	if len(req.GetBackupDefinition()) == 0 {
		return backup.Request{}, &input.Error{Field: "backup_definition", Reason: "is empty: the Backup object (JSON) is required"}
	}
	if n := len(req.GetBackupDefinition()); n > cluster.MaxDefinition {
		return backup.Request{}, input.Invalid("backup_definition", "is %d bytes; at most %d are allowed", n, cluster.MaxDefinition)
	}
	var b backupObject
	if err := json.Unmarshal(req.GetBackupDefinition(), &b); err != nil {
		return backup.Request{}, &input.Error{Field: "backup_definition", Reason: "is not a Backup in JSON: " + input.Truncate(err.Error(), 256)}
	}
	// The name goes into backup.info (one line of barman's format), the catalog and events.
	if err := input.Required("backup_definition.metadata.name", b.Metadata.Name, 253); err != nil {
		return backup.Request{}, err
	}
	if strings.ContainsAny(b.Metadata.Name, "\n\r") {
		return backup.Request{}, input.Invalid("backup_definition.metadata.name", "must be one line")
	}
	if b.Spec.Online != nil && !*b.Spec.Online {
		return backup.Request{}, &input.Error{Field: "backup_definition.spec.online", Reason: "offline (cold) backups are not supported: this plugin takes online backups"}
	}
	params := req.GetParameters()
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if !slices.Contains(backupParams, k) {
			return backup.Request{}, &input.Error{Field: "parameters." + cluster.ParamName(k), Reason: "unknown parameter; known: " + strings.Join(backupParams, ", ")}
		}
		if err := input.String("parameters."+k, params[k], cluster.MaxParameter); err != nil {
			return backup.Request{}, err
		}
	}
	archive, err := wal.Resolve(ctx, s.stores, ct)
	if err != nil {
		return backup.Request{}, err
	}
	store := archive.Store
	if name := params[backupParamStore]; name != "" {
		if store, err = s.stores.Get(name); err != nil {
			return backup.Request{}, err
		}
	}
	comp, err := backup.ParseCompression(params[backupParamCompression])
	if err != nil {
		return backup.Request{}, &input.Error{Field: "parameters." + backupParamCompression, Reason: err.Error()}
	}
	r := backup.Request{
		Target: wal.Target{Store: store, Server: archive.Server}, WALStore: archive.Store, Name: b.Metadata.Name,
		Instance: s.instance, Compression: comp, WaitForArchive: true,
	}
	if oc := b.Spec.OnlineConfiguration; oc != nil {
		r.ImmediateCheckpoint = oc.ImmediateCheckpoint != nil && *oc.ImmediateCheckpoint
		r.WaitForArchive = oc.WaitForArchive == nil || *oc.WaitForArchive
	}
	if v, ok := params[backupParamImmediate]; ok {
		if r.ImmediateCheckpoint, err = strconv.ParseBool(v); err != nil {
			return backup.Request{}, &input.Error{Field: "parameters." + backupParamImmediate, Reason: "must be true or false"}
		}
	}
	return r, nil
}
