package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/history"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
)

// History summarises a server's archive; *history.Reader provides it.
type History interface {
	Summary(ctx context.Context, store, server string) (history.Summary, error)
}

// StoreResolver maps a cluster's store parameters (the ObjectStore resource it names, or its
// objectStore, "" for the default) to the store's name; it fails with
// stores.ErrUnknownStore for stores the plugin lacks.
type StoreResolver func(ctx context.Context, t cluster.Target) (string, error)

// RecoveryWindow is what the plugin reports for a Cluster in status.pluginStatus[].status:
// where its archive is and which span of time a recovery from it can reach.
type RecoveryWindow struct {
	ObjectStore string `json:"objectStore"`
	ServerName  string `json:"serverName"`
	// FirstRecoverabilityPoint is the end of the oldest completed base backup.
	FirstRecoverabilityPoint *time.Time `json:"firstRecoverabilityPoint,omitempty"`
	// LastSuccessfulBackupTime and LastFailedBackupTime are when the newest completed and
	// failed base backups ended.
	LastSuccessfulBackupTime *time.Time `json:"lastSuccessfulBackupTime,omitempty"`
	LastFailedBackupTime     *time.Time `json:"lastFailedBackupTime,omitempty"`
	// Backups counts the completed base backups.
	Backups int64 `json:"backups"`
}

// Status returns the Cluster's recovery window as a JSON object, or nil when the Cluster does
// not use the plugin or already shows exactly this window: CloudNativePG patches the status
// and requeues the Cluster for every non-empty answer, so an unchanged window must be empty.
// The WAL position is left out on purpose: it moves with every segment.
func (r Rules) Status(ctx context.Context, c *cluster.Cluster, h History, resolve StoreResolver) ([]byte, error) {
	t, err := c.ArchiveTarget(r.Plugin)
	if errors.Is(err, cluster.ErrPluginNotUsed) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	store, err := resolve(ctx, t)
	if err != nil {
		return nil, err
	}
	s, err := h.Summary(ctx, store, t.ServerName)
	if err != nil {
		return nil, err
	}
	w := RecoveryWindow{
		ObjectStore: store, ServerName: t.ServerName, Backups: s.Backups,
		FirstRecoverabilityPoint: optional(s.FirstRecoverabilityPoint),
		LastSuccessfulBackupTime: optional(s.LastSuccessfulBackup),
		LastFailedBackupTime:     optional(s.LastFailedBackup),
	}
	out, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode the recovery window: %w", err)
	}
	if sameJSON(out, r.reported(c)) {
		return nil, nil
	}
	return out, nil
}

// reported is the status string the Cluster already holds for this plugin.
func (r Rules) reported(c *cluster.Cluster) string {
	for _, ps := range c.Status.PluginStatus {
		if ps.Name == r.Plugin {
			return ps.Status
		}
	}
	return ""
}

// sameJSON compares two JSON documents by value, so field order or spacing (another plugin
// version, a round trip through the API server) does not count as a change.
func sameJSON(a []byte, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func optional(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
