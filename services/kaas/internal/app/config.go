// Package app wires kaas: config, store, events, auth, providers, the reconciler, the gRPC
// service and its REST gateway. It holds no business rules.
package app

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/services/kaas/internal/access"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas"
)

// Config is the kaas binary's configuration (see the README's table).
type Config struct {
	config.Common

	AuthAddr           string        `env:"PLINTH_AUTH_ADDR" flag:"auth-addr" default:"127.0.0.1:7001" usage:"auth's gRPC address; every call's token is checked there"`
	RESTAddr           string        `env:"PLINTH_KAAS_REST_ADDR" flag:"rest-addr" usage:"address of upstream's REST API (grpc-gateway paths /api/v1/...): host:port or off"`
	Provider           string        `env:"PLINTH_KAAS_PROVIDER" flag:"provider" default:"vagrant" usage:"machine provider of new clusters: vagrant or maas"`
	Versions           []string      `env:"PLINTH_KAAS_VERSIONS" flag:"versions" default:"v1.32.13,v1.33.13" usage:"Kubernetes versions clusters may run"`
	DefaultVersion     string        `env:"PLINTH_KAAS_DEFAULT_VERSION" flag:"default-version" usage:"version of clusters that name none (empty: the newest)"`
	InstanceTypes      []string      `env:"PLINTH_KAAS_INSTANCE_TYPES" flag:"instance-types" default:"standard,gpu" usage:"instance types pools may ask for; the first is the default"`
	MaxPoolSize        int           `env:"PLINTH_KAAS_MAX_POOL_SIZE" flag:"max-pool-size" default:"100" usage:"most machines in one worker pool"`
	MaxClustersPerUser int           `env:"PLINTH_KAAS_MAX_CLUSTERS_PER_USER" flag:"max-clusters-per-user" default:"10" usage:"most clusters one user may own, not counting those being deleted (0: no limit)"`
	MaxMachinesPerUser int           `env:"PLINTH_KAAS_MAX_MACHINES_PER_USER" flag:"max-machines-per-user" default:"50" usage:"most machines the node pools of one user's clusters may ask for, control planes included (0: no limit)"`
	SecretKey          string        `env:"PLINTH_KAAS_SECRET_KEY" secret:"true" usage:"32-byte key (base64 or hex) sealing clusters' key material at rest"`
	SecretKeyFile      string        `env:"PLINTH_KAAS_SECRET_KEY_FILE" flag:"secret-key-file" usage:"file holding the secret key (instead of PLINTH_KAAS_SECRET_KEY)"`
	Instance           string        `env:"PLINTH_KAAS_INSTANCE" flag:"instance" usage:"this replica's name in reconciler leases (empty: host, pid and a random suffix)"`
	Workers            int           `env:"PLINTH_KAAS_WORKERS" flag:"workers" default:"8" usage:"clusters this replica reconciles at once"`
	Lease              time.Duration `env:"PLINTH_KAAS_LEASE" flag:"lease" default:"30s" usage:"how long a replica holds a cluster without renewing"`
	Poll               time.Duration `env:"PLINTH_KAAS_POLL" flag:"poll" default:"2s" usage:"delay between passes of a cluster still converging"`
	Resync             time.Duration `env:"PLINTH_KAAS_RESYNC" flag:"resync" default:"1m" usage:"delay before a converged cluster's machines are looked at again"`
	RetryMax           time.Duration `env:"PLINTH_KAAS_RETRY_MAX" flag:"retry-max" default:"1m" usage:"longest backoff after failed passes"`
	FailAfter          int           `env:"PLINTH_KAAS_FAIL_AFTER" flag:"fail-after" default:"5" usage:"failed passes in a row (provider unreachable) before the status turns ERROR or DEGRADED"`
	ProvisionTimeout   time.Duration `env:"PLINTH_KAAS_PROVISION_TIMEOUT" flag:"provision-timeout" default:"30m" usage:"a machine not ready this long after it was requested fails"`
	CallTimeout        time.Duration `env:"PLINTH_KAAS_CALL_TIMEOUT" flag:"call-timeout" default:"2m" usage:"bound of one provider call"`
	InspectTimeout     time.Duration `env:"PLINTH_KAAS_INSPECT_TIMEOUT" flag:"inspect-timeout" default:"3s" usage:"how long GetClusterNodesStatus asks providers and clusters"`
	KubeconfigTTL      time.Duration `env:"PLINTH_KAAS_KUBECONFIG_TTL" flag:"kubeconfig-ttl" default:"8h" usage:"validity of the client certificate in each kubeconfig GetCluster issues (at most 24h, never beyond the caller's token)"`

	MAAS    MAASConfig
	Vagrant VagrantConfig
}

// MAASConfig configures the maas provider; it is enabled when URL is set.
type MAASConfig struct {
	URL          string `env:"PLINTH_KAAS_MAAS_URL" flag:"maas-url" usage:"MAAS region URL (http://maas:5240/MAAS); empty: no maas provider"`
	APIKey       string `env:"PLINTH_KAAS_MAAS_API_KEY" secret:"true" usage:"MAAS API key consumer:token:secret"`
	Pool         string `env:"PLINTH_KAAS_MAAS_POOL" flag:"maas-pool" usage:"MAAS resource pool machines are allocated from"`
	Zone         string `env:"PLINTH_KAAS_MAAS_ZONE" flag:"maas-zone" usage:"MAAS availability zone machines are allocated from"`
	DistroSeries string `env:"PLINTH_KAAS_MAAS_DISTRO_SERIES" flag:"maas-distro-series" usage:"OS release to deploy (empty: MAAS's default)"`
}

// VagrantConfig configures the vagrant provider; it is enabled when Addr is set.
type VagrantConfig struct {
	Addr       string        `env:"PLINTH_KAAS_VAGRANT_ADDR" flag:"vagrant-addr" usage:"vagrant-server's gRPC address; empty: no vagrant provider"`
	Token      string        `env:"PLINTH_KAAS_VAGRANT_TOKEN" secret:"true" usage:"vagrant-server login token"`
	TokenFile  string        `env:"PLINTH_KAAS_VAGRANT_TOKEN_FILE" flag:"vagrant-token-file" usage:"file holding the vagrant-server login token (reread on every call)"`
	KubeBinDir string        `env:"PLINTH_KAAS_VAGRANT_KUBE_BIN_DIR" flag:"vagrant-kube-bin-dir" default:"bin" usage:"directory of kube-apiserver-<version>, kube-controller-manager-<version> and kwok (make tools-k8s)"`
	Etcd       string        `env:"PLINTH_KAAS_VAGRANT_ETCD" flag:"vagrant-etcd" default:"/usr/bin/etcd" usage:"etcd binary control-plane machines run (Debian's etcd-server)"`
	KubeBuild  string        `env:"PLINTH_KAAS_VAGRANT_KUBE_BUILD_STATUS" flag:"vagrant-kube-build-status" usage:"status file (JSON) of a build of the kube binaries in progress: clusters wait for it instead of being refused; empty: none"`
	MachineDir string        `env:"PLINTH_KAAS_VAGRANT_MACHINE_DIR" flag:"vagrant-machine-dir" default:"/var/lib/plinth-kaas" usage:"directory machines keep their Kubernetes files in"`
	Basis      string        `env:"PLINTH_KAAS_VAGRANT_BASIS" flag:"vagrant-basis" default:"plinth-kaas" usage:"vagrant basis kaas registers its projects in"`
	Wait       time.Duration `env:"PLINTH_KAAS_VAGRANT_WAIT" flag:"vagrant-wait" default:"20s" usage:"how long one reconciler step follows a job before reporting progress"`
	RunnerID   string        `env:"PLINTH_KAAS_VAGRANT_RUNNER_ID" flag:"vagrant-runner-id" usage:"runner id kaas's jobs target (a vagrant-runner's PLINTH_VAGRANT_RUNNER_RESERVED_ID); empty: any runner"`
}

// Defaults returns a Config with kaas's own ports; Load fills the rest.
func Defaults() Config {
	var c Config
	c.GRPCAddr, c.AdminAddr, c.RESTAddr = "127.0.0.1:7003", "127.0.0.1:7103", "127.0.0.1:7203"
	return c
}

// Validate checks everything before anything starts.
func (c *Config) Validate() error {
	errs := []error{c.Common.Validate(),
		config.Required(config.EnvDatabaseURL, "database-url", c.DatabaseURL),
		config.Required(config.EnvNATSURL, "nats-url", c.NATSURL),
		config.Required("PLINTH_AUTH_ADDR", "auth-addr", c.AuthAddr)}
	if _, err := c.Rules(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.Key(); err != nil {
		errs = append(errs, err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"PLINTH_KAAS_LEASE", c.Lease}, {"PLINTH_KAAS_POLL", c.Poll}, {"PLINTH_KAAS_RESYNC", c.Resync}, {"PLINTH_KAAS_RETRY_MAX", c.RetryMax},
		{"PLINTH_KAAS_PROVISION_TIMEOUT", c.ProvisionTimeout}, {"PLINTH_KAAS_CALL_TIMEOUT", c.CallTimeout}, {"PLINTH_KAAS_INSPECT_TIMEOUT", c.InspectTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive", d.name))
		}
	}
	if c.KubeconfigTTL < time.Minute || c.KubeconfigTTL > access.MaxTTL {
		errs = append(errs, fmt.Errorf("PLINTH_KAAS_KUBECONFIG_TTL: between 1m and %s (a certificate cannot be revoked)", access.MaxTTL))
	}
	if c.Lease < time.Second {
		errs = append(errs, errors.New("PLINTH_KAAS_LEASE: at least 1s (it is renewed every third of it)"))
	}
	if c.Workers < 1 {
		errs = append(errs, errors.New("PLINTH_KAAS_WORKERS: at least 1"))
	}
	if c.MAAS.URL != "" {
		if u, err := url.Parse(c.MAAS.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			errs = append(errs, errors.New("PLINTH_KAAS_MAAS_URL: want http(s)://host[:port]/MAAS"))
		}
		if _, err := maas.ParseAPIKey(c.MAAS.APIKey); err != nil {
			errs = append(errs, fmt.Errorf("PLINTH_KAAS_MAAS_API_KEY: %w", err))
		}
	}
	if c.Vagrant.Addr != "" && c.Vagrant.Token == "" && c.Vagrant.TokenFile == "" {
		errs = append(errs, errors.New("PLINTH_KAAS_VAGRANT_TOKEN or PLINTH_KAAS_VAGRANT_TOKEN_FILE: the vagrant provider needs a login token"))
	}
	switch {
	case c.Provider == "maas" && c.MAAS.URL == "":
		errs = append(errs, errors.New("PLINTH_KAAS_PROVIDER is maas: set PLINTH_KAAS_MAAS_URL"))
	case c.Provider == "vagrant" && c.Vagrant.Addr == "":
		errs = append(errs, errors.New("PLINTH_KAAS_PROVIDER is vagrant: set PLINTH_KAAS_VAGRANT_ADDR"))
	case c.Provider != "maas" && c.Provider != "vagrant":
		errs = append(errs, fmt.Errorf("PLINTH_KAAS_PROVIDER: %q is not a provider (vagrant, maas)", c.Provider))
	}
	return errors.Join(errs...)
}

// Rules are the request limits from the configuration.
func (c *Config) Rules() (cluster.Rules, error) {
	cat, err := cluster.NewCatalog(c.Versions, c.DefaultVersion)
	if err != nil {
		return cluster.Rules{}, fmt.Errorf("PLINTH_KAAS_VERSIONS: %w", err)
	}
	quota := cluster.Quota{MaxClusters: c.MaxClustersPerUser, MaxMachines: c.MaxMachinesPerUser}
	if err := quota.Validate(); err != nil {
		return cluster.Rules{}, err // it names the variable
	}
	r := cluster.Rules{Catalog: cat, InstanceTypes: c.InstanceTypes, MaxPoolSize: c.MaxPoolSize, FailAfter: c.FailAfter, Quota: quota}
	if err := r.Validate(); err != nil {
		return cluster.Rules{}, fmt.Errorf("PLINTH_KAAS_INSTANCE_TYPES / PLINTH_KAAS_MAX_POOL_SIZE: %w", err)
	}
	return r, nil
}

// Key is the secret key, from the variable or the file.
func (c *Config) Key() ([]byte, error) {
	s := c.SecretKey
	if s == "" && c.SecretKeyFile != "" {
		b, err := os.ReadFile(c.SecretKeyFile)
		if err != nil {
			return nil, fmt.Errorf("PLINTH_KAAS_SECRET_KEY_FILE: %w", err)
		}
		s = string(b)
	}
	if s == "" {
		return nil, errors.New("PLINTH_KAAS_SECRET_KEY or PLINTH_KAAS_SECRET_KEY_FILE: required (e.g. `openssl rand -base64 32`)")
	}
	k, err := pki.ParseKey(s)
	if err != nil {
		return nil, fmt.Errorf("PLINTH_KAAS_SECRET_KEY: %w", err)
	}
	return k, nil
}

// kubeBinDir is the kube binary directory as an absolute path (relative to the working
// directory when configured relative, as the default bin is for make up).
func (c *Config) kubeBinDir() (string, error) {
	return filepath.Abs(c.Vagrant.KubeBinDir)
}

// instance is this replica's lease owner name.
func (c *Config) instance(random string) string {
	if c.Instance != "" {
		return c.Instance
	}
	host, _ := os.Hostname()
	return strings.Join([]string{host, fmt.Sprint(os.Getpid()), random}, "-")
}
