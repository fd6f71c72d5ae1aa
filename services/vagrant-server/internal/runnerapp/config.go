package runnerapp

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider/netns"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner"
)

// Config is the vagrant-runner binary's configuration. The runner serves no gRPC and keeps no
// database, so it embeds only the telemetry and admin parts of the shared settings. Its
// shutdown deadline is also how long a running job may finish after SIGTERM.
type Config struct {
	config.Telemetry
	config.Admin

	ServerAddr string `env:"PLINTH_VAGRANT_SERVER_ADDR" flag:"server-addr" default:"127.0.0.1:7004" usage:"vagrant-server gRPC address: host:port or unix:///abs/path.sock"`
	Token      string `env:"PLINTH_VAGRANT_TOKEN" flag:"token" secret:"true" usage:"vagrant-server login token (BootstrapToken or GenerateLoginToken); wins over the token file"`
	TokenFile  string `env:"PLINTH_VAGRANT_TOKEN_FILE" flag:"token-file" usage:"file holding the login token, read at every connection attempt (default <state-dir>/token)"`
	RunnerID   string `env:"PLINTH_VAGRANT_RUNNER_ID" flag:"runner-id" usage:"runner id (default: generated once and kept in <state-dir>/id)"`
	ByIDOnly   bool   `env:"PLINTH_VAGRANT_RUNNER_BY_ID_ONLY" flag:"by-id-only" usage:"take only jobs that target this runner by id"`
	StateDir   string `env:"PLINTH_VAGRANT_RUNNER_STATE_DIR" flag:"state-dir" default:".plinth/vagrant-runner" usage:"directory for the runner id and token file"`

	// Jobs run side by side, each on its own job stream; the reserved id (when set) has slots
	// of its own, which jobs for any runner never take. See the README, "Capacity".
	Jobs         int    `env:"PLINTH_VAGRANT_RUNNER_JOBS" flag:"jobs" default:"4" usage:"jobs the runner id runs at once"`
	ReservedID   string `env:"PLINTH_VAGRANT_RUNNER_RESERVED_ID" flag:"reserved-id" usage:"a second runner id, registered by_id_only: it takes only jobs that target it by id (make up gives it to kaas), in slots of its own; empty: none"`
	ReservedJobs int    `env:"PLINTH_VAGRANT_RUNNER_RESERVED_JOBS" flag:"reserved-jobs" default:"4" usage:"jobs the reserved id runs at once"`

	Heartbeat time.Duration `env:"PLINTH_VAGRANT_RUNNER_HEARTBEAT" flag:"heartbeat" default:"10s" usage:"interval of job heartbeats (keep it well below the server's heartbeat timeout, 60s)"`

	NetnsBridge string `env:"PLINTH_VAGRANT_NETNS_BRIDGE" flag:"netns-bridge" default:"plinth-br0" usage:"netns provider: host bridge the machines join"`
	NetnsSubnet string `env:"PLINTH_VAGRANT_NETNS_SUBNET" flag:"netns-subnet" default:"10.213.0.0/24" usage:"netns provider: the machines' private IPv4 subnet (exists only on this host)"`

	// Each netns machine is a runc container (see the README, "The netns provider").
	NetnsSandbox    string   `env:"PLINTH_VAGRANT_NETNS_SANDBOX" flag:"netns-sandbox" default:"runc" usage:"netns provider: runc (each machine a container: own users, filesystem, processes, limits) or off (only the network apart: for a runner that is itself a container)"`
	NetnsMachineDir string   `env:"PLINTH_VAGRANT_NETNS_MACHINE_DIR" flag:"netns-machine-dir" default:"/var/lib/plinth-vagrant-netns" usage:"netns provider: the machines' root filesystems (their disks); every directory above it must be searchable by others"`
	NetnsShare      []string `env:"PLINTH_VAGRANT_NETNS_SHARE" flag:"netns-share" usage:"netns provider: host paths every machine sees read-only at the same path, comma-separated (make up: kaas's kube binaries)"`
	NetnsMemory     string   `env:"PLINTH_VAGRANT_NETNS_MEMORY" flag:"netns-memory" default:"2G" usage:"netns provider: each machine's memory limit (512M, 2G)"`
	NetnsCPUs       string   `env:"PLINTH_VAGRANT_NETNS_CPUS" flag:"netns-cpus" default:"1" usage:"netns provider: each machine's CPU limit in CPUs (0.5, 2)"`
	NetnsPids       int      `env:"PLINTH_VAGRANT_NETNS_PIDS" flag:"netns-pids" default:"2048" usage:"netns provider: each machine's limit of processes and threads"`
	NetnsHostID     int      `env:"PLINTH_VAGRANT_NETNS_HOST_ID" flag:"netns-host-id" default:"1000000000" usage:"netns provider: the host uid and gid of root in the machines, first of 65536 (clear of the host's users)"`
}

// maxSlots bounds the jobs one runner id runs at once: each holds a stream and its machine's
// processes, and a queue's worth of them on one host is a mistake, not capacity.
const maxSlots = 64

// Defaults returns a Config with the runner's admin port; Load fills the rest.
func Defaults() Config {
	var c Config
	c.AdminAddr = "127.0.0.1:7107"
	return c
}

// Validate checks everything before anything starts and reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	check := func(env, flag string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (-%s): %w", env, flag, err))
		}
	}
	errs = append(errs, c.Telemetry.Validate(), c.Admin.Validate())
	_, _, err := config.ParseListenAddr(c.ServerAddr)
	check("PLINTH_VAGRANT_SERVER_ADDR", "server-addr", err)
	if c.StateDir == "" {
		check("PLINTH_VAGRANT_RUNNER_STATE_DIR", "state-dir", errors.New("required"))
	}
	if c.Heartbeat <= 0 {
		check("PLINTH_VAGRANT_RUNNER_HEARTBEAT", "heartbeat", errors.New("must be positive (e.g. 10s)"))
	}
	if _, err := netip.ParsePrefix(c.NetnsSubnet); err != nil {
		check("PLINTH_VAGRANT_NETNS_SUBNET", "netns-subnet", fmt.Errorf("%q is not a CIDR prefix like 10.213.0.0/24", c.NetnsSubnet))
	}
	_, err = c.sandbox()
	check("PLINTH_VAGRANT_NETNS_SANDBOX", "netns-sandbox", err)
	if c.RunnerID != "" && !runner.ValidID(c.RunnerID) {
		check("PLINTH_VAGRANT_RUNNER_ID", "runner-id", fmt.Errorf("%q: use 1-64 letters, digits, '-', '_' or '.'", c.RunnerID))
	}
	if c.Jobs < 1 || c.Jobs > maxSlots {
		check("PLINTH_VAGRANT_RUNNER_JOBS", "jobs", fmt.Errorf("%d: want 1 to %d", c.Jobs, maxSlots))
	}
	if c.ReservedID != "" {
		if !runner.ValidID(c.ReservedID) {
			check("PLINTH_VAGRANT_RUNNER_RESERVED_ID", "reserved-id", fmt.Errorf("%q: use 1-64 letters, digits, '-', '_' or '.'", c.ReservedID))
		} else if c.ReservedID == c.RunnerID {
			check("PLINTH_VAGRANT_RUNNER_RESERVED_ID", "reserved-id", errors.New("must differ from PLINTH_VAGRANT_RUNNER_ID"))
		}
		if c.ReservedJobs < 1 || c.ReservedJobs > maxSlots {
			check("PLINTH_VAGRANT_RUNNER_RESERVED_JOBS", "reserved-jobs", fmt.Errorf("%d: want 1 to %d", c.ReservedJobs, maxSlots))
		}
	}
	return errors.Join(errs...)
}

// sandbox is the netns provider's sandbox, nil when it is off. Each setting it cannot use
// is named in the error.
func (c *Config) sandbox() (*netns.Sandbox, error) {
	switch c.NetnsSandbox {
	case "off":
		return nil, nil
	case "runc":
	default:
		return nil, fmt.Errorf("%q: want runc or off", c.NetnsSandbox)
	}
	var errs []error
	memory, err := config.ParseSize(c.NetnsMemory)
	if err != nil {
		errs = append(errs, fmt.Errorf("PLINTH_VAGRANT_NETNS_MEMORY: %w", err))
	}
	cpus, err := strconv.ParseFloat(c.NetnsCPUs, 64)
	if err != nil || cpus <= 0 {
		errs = append(errs, fmt.Errorf("PLINTH_VAGRANT_NETNS_CPUS: %q is not a positive number of CPUs", c.NetnsCPUs))
	}
	if c.NetnsPids <= 0 {
		errs = append(errs, fmt.Errorf("PLINTH_VAGRANT_NETNS_PIDS: %d is not positive", c.NetnsPids))
	}
	if c.NetnsHostID <= 0 || c.NetnsHostID > 1<<32-1 {
		errs = append(errs, fmt.Errorf("PLINTH_VAGRANT_NETNS_HOST_ID: %d is not a uid", c.NetnsHostID))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &netns.Sandbox{Dir: c.NetnsMachineDir, Share: c.NetnsShare, Memory: memory, CPUs: cpus,
		Pids: int64(c.NetnsPids), HostID: uint32(c.NetnsHostID)}, nil
}

// tokenFile is where the token is read from when none is configured directly; absolute, so
// the messages that name it are unambiguous whatever the working directory.
func (c *Config) tokenFile() string {
	f := c.TokenFile
	if f == "" {
		f = filepath.Join(c.StateDir, "token")
	}
	if abs, err := filepath.Abs(f); err == nil {
		return abs
	}
	return f
}
