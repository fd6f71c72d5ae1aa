package app

import (
	"errors"
	"time"

	cnpgiplugin "github.com/plinth-dev/plinth/services/cnpgi-plugin/plugin"
)

// OperatorConfig configures the operator side of the plugin: the mutual-TLS listener the
// operator dials, the instance sidecar it injects, the reconciler hooks, and the WAL events.
// It is part of Config.
type OperatorConfig struct {
	// OperatorTLS is the mutual-TLS listener, declared with the plugin's contract (the
	// launcher sets it from there).
	cnpgiplugin.OperatorTLS

	SidecarImage     string `env:"PLINTH_CNPGI_SIDECAR_IMAGE" flag:"sidecar-image" usage:"image of the plugin that OperatorLifecycle injects into instance Pods and recovery Jobs; empty: no injection (the service is not offered)"`
	SidecarEnvSecret string `env:"PLINTH_CNPGI_SIDECAR_ENV_SECRET" flag:"sidecar-env-secret" usage:"Secret (in each cluster's namespace) whose keys become the sidecar's environment, e.g. PLINTH_DATABASE_URL and store credentials"`
	SidecarConfigMap string `env:"PLINTH_CNPGI_SIDECAR_CONFIG_MAP" flag:"sidecar-config-map" usage:"ConfigMap (in each cluster's namespace) whose config.yaml is the sidecar's store configuration"`

	RequeueAfter time.Duration `env:"PLINTH_CNPGI_REQUEUE_AFTER" flag:"requeue-after" default:"30s" usage:"how long the operator waits before retrying a reconciliation held back because the object store is unreachable"`
	ProbeTimeout time.Duration `env:"PLINTH_CNPGI_PROBE_TIMEOUT" flag:"probe-timeout" default:"5s" usage:"how long ReconcilerHooks waits for the object store to answer before holding the reconciliation back (CloudNativePG gives the whole call 30s)"`

	WALEventBatch    int           `env:"PLINTH_CNPGI_WAL_EVENT_BATCH" flag:"wal-event-batch" default:"32" usage:"most WAL files one plinth.cnpgi.wal.archived event names"`
	WALEventInterval time.Duration `env:"PLINTH_CNPGI_WAL_EVENT_INTERVAL" flag:"wal-event-interval" default:"10s" usage:"longest an archived WAL file waits to be announced"`
}

// validate checks the operator settings; every problem at once.
func (c *OperatorConfig) validate() error {
	errs := []error{c.OperatorTLS.Validate()}
	if c.SidecarImage == "" && (c.SidecarEnvSecret != "" || c.SidecarConfigMap != "") {
		errs = append(errs, errors.New("PLINTH_CNPGI_SIDECAR_ENV_SECRET and _CONFIG_MAP configure the injected sidecar: set PLINTH_CNPGI_SIDECAR_IMAGE too"))
	}
	if c.RequeueAfter < time.Second {
		errs = append(errs, errors.New("PLINTH_CNPGI_REQUEUE_AFTER (-requeue-after): must be at least 1s"))
	}
	if c.ProbeTimeout < 100*time.Millisecond || c.ProbeTimeout > 25*time.Second {
		errs = append(errs, errors.New("PLINTH_CNPGI_PROBE_TIMEOUT (-probe-timeout): must be between 100ms and 25s (CloudNativePG gives the whole call 30s)"))
	}
	if c.WALEventBatch < 1 || c.WALEventBatch > 10000 {
		errs = append(errs, errors.New("PLINTH_CNPGI_WAL_EVENT_BATCH (-wal-event-batch): must be between 1 and 10000"))
	}
	if c.WALEventInterval < 10*time.Millisecond {
		errs = append(errs, errors.New("PLINTH_CNPGI_WAL_EVENT_INTERVAL (-wal-event-interval): must be at least 10ms"))
	}
	return errors.Join(errs...)
}
