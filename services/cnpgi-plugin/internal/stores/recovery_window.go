package stores

import (
	"context"
	"time"
)

// RecoveryWindow is one server's entry in an ObjectStore's status.serverRecoveryWindow, the
// schema plugin-barman-cloud writes (and `kubectl get objectstore -o yaml` shows): the
// earliest point a recovery from the store can reach, and when the newest successful and
// failed base backups ended. Nil means "none".
type RecoveryWindow struct {
	FirstRecoverabilityPoint *time.Time `json:"firstRecoverabilityPoint,omitempty"`
	LastSuccessfulBackupTime *time.Time `json:"lastSuccessfulBackupTime,omitempty"`
	LastFailedBackupTime     *time.Time `json:"lastFailedBackupTime,omitempty"`
}

// RecoveryWindows writes ObjectStore resources' status.serverRecoveryWindow (internal/kube).
type RecoveryWindows interface {
	// UpdateRecoveryWindow changes the entry of server in the status of ObjectStore name in
	// namespace with set, which sees the entry as it is (the zero value when there is none).
	UpdateRecoveryWindow(ctx context.Context, namespace, name, server string, set func(*RecoveryWindow)) error
}

// RecoveryWindows is the writer of ObjectStore statuses; nil when the plugin reads no
// ObjectStore resources.
func (r *Registry) RecoveryWindows() RecoveryWindows {
	w, _ := r.objects.(RecoveryWindows)
	return w
}

// At is t as the Kubernetes API keeps times (metav1.Time: UTC, whole seconds); nil for the
// zero time.
func At(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC().Truncate(time.Second)
	return &t
}
