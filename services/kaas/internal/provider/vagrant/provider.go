package vagrant

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider"
)

// Name is the provider's name in clusters and events.
const Name = "vagrant"

// Options configure the provider.
type Options struct {
	// Basis is the vagrant basis kaas registers its projects in ["plinth-kaas"].
	Basis string
	// MachineDir is where, on the machines, each machine keeps its files (under
	// <cluster>-<uid>/<machine>); a netns machine shares the runner's filesystem
	// [/var/lib/plinth-kaas].
	MachineDir string
	// KubeBinDir holds kube-apiserver-<version>, kube-controller-manager-<version> and kwok,
	// as the machines see it [required].
	KubeBinDir string
	// Etcd is the etcd binary on the machines [/usr/bin/etcd].
	Etcd string
	// KubeBuildStatus is the launcher's status file of a build of the Kubernetes binaries in
	// progress (see Prerequisites); "" when there is none.
	KubeBuildStatus string
	// MachineProvider is the runner's machine provider targets use ["netns"].
	MachineProvider string
	// Wait bounds how long one call follows a job or waits for readiness before it reports
	// progress and returns [20s].
	Wait time.Duration
	// JobExpiry fails a job no runner took in time [10m].
	JobExpiry time.Duration
}

// Provider is the vagrant provider.
type Provider struct {
	c   *Client
	o   Options
	pre Prerequisites
}

// New returns a provider calling vagrant-server through c.
func New(c *Client, o Options) (*Provider, error) {
	if o.KubeBinDir == "" || !filepath.IsAbs(o.KubeBinDir) {
		return nil, fmt.Errorf("vagrant provider: the kube binary directory must be an absolute path, got %q", o.KubeBinDir)
	}
	if o.Basis == "" {
		o.Basis = "plinth-kaas"
	}
	if o.MachineDir == "" {
		o.MachineDir = "/var/lib/plinth-kaas"
	}
	if !filepath.IsAbs(o.MachineDir) {
		return nil, fmt.Errorf("vagrant provider: the machine directory must be an absolute path, got %q", o.MachineDir)
	}
	if o.Etcd == "" {
		o.Etcd = "/usr/bin/etcd"
	}
	if o.MachineProvider == "" {
		o.MachineProvider = "netns"
	}
	if o.Wait <= 0 {
		o.Wait = 20 * time.Second
	}
	if o.JobExpiry <= 0 {
		o.JobExpiry = 10 * time.Minute
	}
	return &Provider{c: c, o: o, pre: Prerequisites{KubeBinDir: o.KubeBinDir, Etcd: o.Etcd, BuildStatus: o.KubeBuildStatus}}, nil
}

// Name returns "vagrant".
func (p *Provider) Name() string { return Name }

// Preflight refuses version when a binary its control-plane machines run is missing and no
// build in progress will bring it; a build in progress is accepted (the machines wait).
func (p *Provider) Preflight(version string) error {
	_, err := p.pre.Check(version, true)
	return err
}

// prerequisites holds back a machine whose bootstrap would not find its binaries: Pending
// while a build brings them, Failed when nothing will (done: the caller returns o).
func (p *Provider) prerequisites(m provider.Machine, b provider.Bootstrap, st progress) (o provider.Observation, done bool) {
	wait, err := p.pre.Check(b.Version, isCP(m))
	switch {
	case err != nil:
		return p.observation(m, st, provider.Failed, "failed", err.Error()), true
	case wait != "":
		return p.observation(m, st, provider.Pending, "waiting", wait), true
	}
	return provider.Observation{}, false
}

// Steps of a machine's provisioning, in order.
const (
	stepUp        = "up"        // the runner creates and starts the machine
	stepProbe     = "probe"     // read its address
	stepKey       = "key"       // it makes its own key pair; kaas keeps the public key
	stepEtcd      = "etcd"      // a joining control-plane machine becomes an etcd member
	stepBootstrap = "bootstrap" // start Kubernetes on it
	stepReady     = "ready"     // wait until its API server and Node are ready
	stepDone      = "done"
)

// progress is what the provider keeps between calls (Machine.State).
type progress struct {
	Project string `json:"project,omitempty"`
	Target  string `json:"target,omitempty"`
	Address string `json:"address,omitempty"`
	Step    string `json:"step,omitempty"`
	Job     string `json:"job,omitempty"`
	// LastJob is the job queued last, kept once it completed: its output tells what the
	// machine's provisioning (or release) did.
	LastJob     string `json:"last_job,omitempty"`
	EtcdCluster string `json:"etcd_cluster,omitempty"`
	EtcdState   string `json:"etcd_state,omitempty"`
	// MachineKey is the machine's public key (PEM), which its bootstrap files are sealed to.
	MachineKey string `json:"machine_key,omitempty"`
	// Version is the Kubernetes version the last bootstrap ran.
	Version string `json:"version,omitempty"`
	// Release is the release's step: "cleanup", "destroy", "delete".
	Release string `json:"release,omitempty"`
}

func readProgress(b []byte) progress { return provider.ReadState[progress](b) }

// JobOf is the vagrant job that last worked on the machine whose progress state holds
// (provider.JobReporter).
func (p *Provider) JobOf(state []byte) string { return readProgress(state).LastJob }

func (st progress) bytes() []byte { return provider.WriteState(st) }

// dir is machine m's directory on the machines.
func (p *Provider) dir(m provider.Machine) string {
	return filepath.Join(p.o.MachineDir, projectName(m), m.Name)
}

// projectName is the cluster's vagrant project: its name and a hash of its uid, so a cluster
// created again under an old name never meets the old one's targets.
func projectName(m provider.Machine) string {
	sum := sha256.Sum256([]byte(m.ClusterUID))
	return m.Cluster + "-" + hex.EncodeToString(sum[:])[:8]
}

// observation reports st: the target as provider id, the address, where it stands.
func (p *Provider) observation(m provider.Machine, st progress, phase provider.Phase, status, msg string) provider.Observation {
	o := provider.Observation{Phase: phase, ProviderID: st.Target, Hostname: m.Name, Status: status, Message: msg, State: st.bytes()}
	if st.Address != "" {
		o.Addresses = []string{st.Address}
	}
	return o
}

// ensureTarget registers the cluster's project and the machine's target.
func (p *Provider) ensureTarget(ctx context.Context, m provider.Machine, st *progress) error {
	if st.Target != "" {
		return nil
	}
	basis, err := p.c.ensureBasis(ctx, p.o.Basis, p.o.MachineDir)
	if err != nil {
		return fmt.Errorf("register basis %s: %w", p.o.Basis, err)
	}
	project, err := p.c.ensureProject(ctx, basis, projectName(m), filepath.Join(p.o.MachineDir, projectName(m)))
	if err != nil {
		return fmt.Errorf("register project %s: %w", projectName(m), err)
	}
	t, err := p.c.upsertTarget(ctx, project, m.Name, p.o.MachineProvider)
	if err != nil {
		return fmt.Errorf("register target %s: %w", m.Name, err)
	}
	st.Project, st.Target = project, t.GetResourceId()
	return nil
}

// runJob queues command (once; its id is kept in st.Job and st.LastJob) and follows it for
// at most wait. done reports completion; a completed job clears st.Job.
func (p *Provider) runJob(ctx context.Context, st *progress, command string, args []string, wait time.Duration) (result, error) {
	if st.Job == "" {
		id, err := p.c.queue(ctx, st.Target, command, args, p.o.JobExpiry)
		if err != nil {
			return result{}, fmt.Errorf("queue %s: %w", command, err)
		}
		st.Job, st.LastJob = id, id
	}
	r, err := p.c.follow(ctx, st.Job, wait)
	if err != nil {
		return r, fmt.Errorf("follow job %s (%s): %w", st.Job, command, err)
	}
	if r.Done {
		st.Job = ""
	}
	return r, nil
}

// waiting describes a job that has not completed yet.
func waiting(what string, r result) string {
	switch r.State {
	case vagrant.Job_QUEUED, vagrant.Job_UNKNOWN:
		return what + ": the job waits for a vagrant-runner"
	case vagrant.Job_WAITING:
		return what + ": a runner was assigned"
	}
	return what + ": running"
}

// failed is a job that completed without success.
func failed(what string, r result) string {
	msg := what + " failed: " + r.Failure
	if tail := lastLines(r.Output, 3); tail != "" {
		msg += " (" + tail + ")"
	}
	return msg
}

// isCP reports a control-plane machine.
func isCP(m provider.Machine) bool { return m.Role == cluster.RoleControlPlane }
