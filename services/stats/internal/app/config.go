// Package app wires the stats service: config, store, NATS, the token check, the sources, the
// collector and the gRPC server. It holds no business rules.
package app

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/services/stats/internal/ceph"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// Config is the stats binary's configuration (see the README's table).
type Config struct {
	config.Common

	AuthAddr      string        `env:"PLINTH_AUTH_ADDR" renamed:"PLINTH_STATS_AUTH_ADDR" flag:"auth-addr" usage:"auth's gRPC address (host:port or unix:///path): every call's token is checked there"`
	TokenCacheTTL time.Duration `env:"PLINTH_STATS_TOKEN_CACHE_TTL" flag:"token-cache-ttl" default:"10s" usage:"how long auth's yes for a token is reused (at most 30s; revocations drop it at once; 0 asks auth every call)"`

	CephURL          string `env:"PLINTH_STATS_CEPH_URL" flag:"ceph-url" secret:"url" usage:"the mgr dashboard (https://user:password@mgr:8443) or the mgr prometheus module (http://mgr:9283/metrics); empty: no Ceph source"`
	CephUser         string `env:"PLINTH_STATS_CEPH_USER" flag:"ceph-user" usage:"dashboard user (instead of the URL's)"`
	CephPassword     string `env:"PLINTH_STATS_CEPH_PASSWORD" secret:"true" usage:"dashboard password (instead of the URL's)"`
	CephPasswordFile string `env:"PLINTH_STATS_CEPH_PASSWORD_FILE" flag:"ceph-password-file" usage:"file holding the dashboard password (instead of PLINTH_STATS_CEPH_PASSWORD; trailing newline ignored; read at start)"`
	CephCAFile       string `env:"PLINTH_STATS_CEPH_CA_FILE" flag:"ceph-ca-file" usage:"PEM CA bundle the mgr's certificate must chain to (default: the system's)"`
	CephInsecure     bool   `env:"PLINTH_STATS_CEPH_INSECURE_SKIP_VERIFY" flag:"ceph-insecure-skip-verify" usage:"accept any certificate from the mgr (a self-signed dashboard)"`

	Kubeconfig    string `env:"PLINTH_STATS_KUBECONFIG" flag:"kubeconfig" usage:"kubeconfig of the cluster Rook runs in; empty: no Kubernetes source unless in-cluster"`
	KubeInCluster bool   `env:"PLINTH_STATS_KUBE_IN_CLUSTER" flag:"kube-in-cluster" usage:"read Kubernetes with the pod's service account"`
	Namespace     string `env:"PLINTH_STATS_NAMESPACE" flag:"namespace" default:"rook-ceph" usage:"the storage cluster's namespace"`

	Inventory       bool          `env:"PLINTH_STATS_INVENTORY" flag:"inventory" default:"true" usage:"consume lvmd-agent's and kaas's events into the suite's node inventory"`
	HeartbeatMisses int           `env:"PLINTH_STATS_HEARTBEAT_MISSES" flag:"heartbeat-misses" default:"3" usage:"heartbeat intervals a storage node may miss before it is NOT_READY"`
	ForgetAfter     time.Duration `env:"PLINTH_STATS_FORGET_AFTER" flag:"forget-after" default:"168h" usage:"storage nodes silent and machines released this long are removed from the inventory"`

	RefreshInterval  time.Duration `env:"PLINTH_STATS_REFRESH_INTERVAL" flag:"refresh-interval" default:"5s" usage:"time between refreshes of each source"`
	SourceTimeout    time.Duration `env:"PLINTH_STATS_SOURCE_TIMEOUT" flag:"source-timeout" default:"20s" usage:"longest a refresh may take"`
	StabilityWindow  time.Duration `env:"PLINTH_STATS_STABILITY_WINDOW" flag:"stability-window" default:"1h" usage:"how far back changes of state count against stability and make the usage trend"`
	HistoryInterval  time.Duration `env:"PLINTH_STATS_HISTORY_INTERVAL" flag:"history-interval" default:"1m" usage:"longest time between two usage history samples while nothing changes"`
	HistoryRetention time.Duration `env:"PLINTH_STATS_HISTORY_RETENTION" flag:"history-retention" default:"24h" usage:"how long the usage history is kept"`
}

// Defaults returns a Config with the stats service's own ports; Load fills the rest.
func Defaults() Config {
	var c Config
	c.GRPCAddr, c.AdminAddr = "127.0.0.1:7002", "127.0.0.1:7102"
	return c
}

// Validate checks everything before anything starts, reporting every problem at once.
func (c *Config) Validate() error {
	errs := []error{
		c.Common.Validate(),
		config.Required(config.EnvDatabaseURL, "database-url", c.DatabaseURL),
		config.Required(config.EnvNATSURL, "nats-url", c.NATSURL),
		config.Required("PLINTH_AUTH_ADDR", "auth-addr", c.AuthAddr),
	}
	if c.CephURL == "" && !c.kubeConfigured() && !c.Inventory {
		errs = append(errs, errors.New("no source: set PLINTH_STATS_CEPH_URL, PLINTH_STATS_KUBECONFIG or PLINTH_STATS_KUBE_IN_CLUSTER, or keep PLINTH_STATS_INVENTORY=true"))
	}
	if c.Kubeconfig != "" && c.KubeInCluster {
		errs = append(errs, errors.New("PLINTH_STATS_KUBECONFIG and PLINTH_STATS_KUBE_IN_CLUSTER exclude each other"))
	}
	if c.CephPassword != "" && c.CephPasswordFile != "" {
		errs = append(errs, errors.New("PLINTH_STATS_CEPH_PASSWORD and PLINTH_STATS_CEPH_PASSWORD_FILE exclude each other"))
	} else if c.CephURL != "" {
		if cc, err := c.cephConfig(); err != nil {
			errs = append(errs, err)
		} else if _, err := ceph.New(cc); err != nil {
			errs = append(errs, fmt.Errorf("PLINTH_STATS_CEPH_URL: %w", err))
		}
	}
	for name, d := range map[string]time.Duration{"PLINTH_STATS_REFRESH_INTERVAL": c.RefreshInterval, "PLINTH_STATS_SOURCE_TIMEOUT": c.SourceTimeout,
		"PLINTH_STATS_STABILITY_WINDOW": c.StabilityWindow, "PLINTH_STATS_HISTORY_INTERVAL": c.HistoryInterval,
		"PLINTH_STATS_HISTORY_RETENTION": c.HistoryRetention, "PLINTH_STATS_FORGET_AFTER": c.ForgetAfter} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive", name))
		}
	}
	if c.TokenCacheTTL < 0 || c.TokenCacheTTL > authn.MaxCacheTTL {
		errs = append(errs, fmt.Errorf("PLINTH_STATS_TOKEN_CACHE_TTL: must be between 0 and %v", authn.MaxCacheTTL))
	}
	if c.HeartbeatMisses < 1 {
		errs = append(errs, errors.New("PLINTH_STATS_HEARTBEAT_MISSES: must be at least 1"))
	}
	return errors.Join(errs...)
}

func (c *Config) kubeConfigured() bool { return c.Kubeconfig != "" || c.KubeInCluster }

// cephConfig is the Ceph source's configuration, with the password read from
// PLINTH_STATS_CEPH_PASSWORD_FILE when that is set (make up's dev Ceph keeps it in a 0600 file).
func (c *Config) cephConfig() (ceph.Config, error) {
	password := c.CephPassword
	if c.CephPasswordFile != "" {
		data, err := os.ReadFile(c.CephPasswordFile)
		if err != nil {
			return ceph.Config{}, fmt.Errorf("PLINTH_STATS_CEPH_PASSWORD_FILE: %w", err)
		}
		password = strings.TrimRight(string(data), "\r\n")
		if password == "" {
			return ceph.Config{}, fmt.Errorf("PLINTH_STATS_CEPH_PASSWORD_FILE: %s is empty", c.CephPasswordFile)
		}
	}
	return ceph.Config{URL: c.CephURL, User: c.CephUser, Password: password, CAFile: c.CephCAFile, InsecureSkipVerify: c.CephInsecure}, nil
}

func (c *Config) recorderOptions() cluster.RecorderOptions {
	return cluster.RecorderOptions{Window: c.StabilityWindow, Every: c.HistoryInterval, Retention: c.HistoryRetention}
}
