package vagrant

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider"
)

// Provision moves m through its steps — target, up, address, etcd membership (a joining
// control-plane machine), bootstrap, readiness — as far as it gets within Options.Wait. A
// machine whose binaries are missing starts nothing: it waits while they are being built
// and fails when nothing will bring them (Prerequisites); so does the bootstrap step.
func (p *Provider) Provision(ctx context.Context, m provider.Machine, b provider.Bootstrap) (provider.Observation, error) {
	st := readProgress(m.State)
	if st.Step == "" {
		st.Step = stepUp
	}
	if st.Step == stepUp && st.Job == "" {
		if o, held := p.prerequisites(m, b, st); held {
			return o, nil
		}
	}
	if err := p.ensureTarget(ctx, m, &st); err != nil {
		return provider.Observation{}, err
	}
	return p.advance(ctx, m, b, st)
}

// Upgrade runs the bootstrap again with b.Version: the control plane restarts on the new
// version's binaries (etcd keeps running), the Node reports the new version.
func (p *Provider) Upgrade(ctx context.Context, m provider.Machine, b provider.Bootstrap) (provider.Observation, error) {
	st := readProgress(m.State)
	if st.Version != b.Version && st.Step == stepDone {
		st.Step = stepBootstrap
	}
	return p.advance(ctx, m, b, st)
}

func (p *Provider) advance(ctx context.Context, m provider.Machine, b provider.Bootstrap, st progress) (provider.Observation, error) {
	deadline := time.Now().Add(p.o.Wait)
	left := func() time.Duration { return max(time.Until(deadline), time.Second) }
	for {
		switch st.Step {
		case stepUp:
			r, err := p.runJob(ctx, &st, "up", nil, left())
			if err != nil {
				return provider.Observation{}, err
			}
			if !r.Done {
				return p.observation(m, st, provider.Pending, "creating", waiting("vagrant up", r)), nil
			}
			if !r.OK {
				return p.observation(m, st, provider.Failed, "failed", failed("vagrant up", r)), nil
			}
			st.Step = stepProbe
		case stepProbe:
			r, err := p.runJob(ctx, &st, "exec", []string{"ip", "-4", "-o", "addr", "show", "dev", "eth0"}, left())
			if err != nil {
				return provider.Observation{}, err
			}
			if !r.Done {
				return p.observation(m, st, provider.Pending, "running", waiting("reading the address", r)), nil
			}
			addr, err := parseAddress(r.Output)
			if !r.OK || err != nil {
				return p.observation(m, st, provider.Failed, "failed", failed("reading the machine's address", r)), nil
			}
			st.Address, st.Step = addr, stepKey
		case stepKey:
			r, err := p.runJob(ctx, &st, "exec", []string{"/bin/sh", "-c", withVars(keyScript, [][2]string{{"D", p.dir(m)}})}, left())
			if err != nil {
				return provider.Observation{}, err
			}
			if !r.Done {
				return p.observation(m, st, provider.Pending, "running", waiting("making the machine's key", r)), nil
			}
			pub, err := pki.ParseMachineKey(r.Output)
			if !r.OK || err != nil {
				return p.observation(m, st, provider.Failed, "failed", failed("making the machine's key", r)), nil
			}
			pem, err := pki.MachineKeyPEM(pub)
			if err != nil {
				return provider.Observation{}, err
			}
			st.MachineKey, st.Step = string(pem), stepBootstrap
			if isCP(m) && !b.Init && st.EtcdCluster == "" {
				st.Step = stepEtcd
			}
		case stepEtcd:
			var peers []string
			for _, peer := range b.ControlPlane {
				peers = append(peers, peer.Address)
			}
			cl, err := joinEtcd(ctx, b.PKI, peers, m.Name, st.Address)
			if err != nil {
				return provider.Observation{}, err
			}
			st.EtcdCluster, st.EtcdState, st.Step = cl, "existing", stepBootstrap
		case stepBootstrap:
			if st.Job == "" {
				if o, held := p.prerequisites(m, b, st); held {
					return o, nil
				}
				if st.MachineKey == "" {
					st.Step = stepKey // a machine provisioned before kaas sealed its files
					continue
				}
			}
			args, err := p.bootstrapArgs(m, b, st)
			if err != nil {
				return provider.Observation{}, err
			}
			r, err := p.runJob(ctx, &st, "exec", args, left())
			if err != nil {
				return provider.Observation{}, err
			}
			if !r.Done {
				return p.observation(m, st, provider.Pending, "running", waiting("bootstrapping Kubernetes "+b.Version, r)), nil
			}
			if !r.OK {
				return p.observation(m, st, provider.Failed, "failed", failed("bootstrap of Kubernetes "+b.Version, r)), nil
			}
			st.Version, st.Step = b.Version, stepReady
		case stepReady:
			if err := p.ready(ctx, m, b, st, left()); err != nil {
				return p.observation(m, st, provider.Pending, "running", "waiting for Kubernetes "+b.Version+": "+err.Error()), nil
			}
			st.Step = stepDone
		case stepDone:
			return p.observation(m, st, provider.Ready, "running", ""), nil
		default:
			return provider.Observation{}, fmt.Errorf("unknown provisioning step %q", st.Step)
		}
	}
}

// bootstrapArgs is the exec job's command line: /bin/sh -c <script> with the files.
func (p *Provider) bootstrapArgs(m provider.Machine, b provider.Bootstrap, st progress) ([]string, error) {
	dir := p.dir(m)
	files, err := bootstrapFiles(m, b, st.Address, dir)
	if err != nil {
		return nil, err
	}
	sealed, err := sealedArgs(st.MachineKey, files)
	if err != nil {
		return nil, fmt.Errorf("seal the bootstrap files for %s: %w", m.Name, err)
	}
	role, api, initFlag := "worker", b.Endpoint, "0"
	if isCP(m) {
		role, api = "control-plane", net.JoinHostPort(st.Address, "6443")
	}
	if b.Init {
		initFlag = "1"
	}
	etcdCluster, etcdState := st.EtcdCluster, st.EtcdState
	if etcdCluster == "" {
		etcdCluster, etcdState = m.Name+"=https://"+net.JoinHostPort(st.Address, "2380"), "new"
	}
	leader := "false"
	if b.ControlPlaneSize > 1 {
		leader = "true"
	}
	script := withVars(bootstrapScript, [][2]string{
		{"D", dir}, {"BIN", p.o.KubeBinDir}, {"ETCD", p.o.Etcd}, {"V", b.Version}, {"N", m.Name}, {"A", st.Address},
		{"API", api}, {"ROLE", role}, {"INIT", initFlag}, {"ETCD_CLUSTER", etcdCluster}, {"ETCD_STATE", etcdState},
		{"LEADER_ELECT", leader}, {"POD_CIDR", podCIDR(st.Address)},
	})
	return append([]string{"/bin/sh", "-c", script, "kaas-bootstrap"}, sealed...), nil
}

// Release stops Kubernetes on the machine and removes its files (best effort: a machine that
// is not running has nothing to stop), destroys the machine and deletes its target.
func (p *Provider) Release(ctx context.Context, m provider.Machine) (provider.Observation, error) {
	st := readProgress(m.State)
	if st.Target == "" {
		return provider.Observation{Phase: provider.Gone}, nil // never registered
	}
	if st.Release == "" {
		st.Release, st.Job = "cleanup", ""
	}
	deadline := time.Now().Add(p.o.Wait)
	left := func() time.Duration { return max(time.Until(deadline), time.Second) }
	for {
		switch st.Release {
		case "cleanup":
			t, err := p.c.target(ctx, st.Target)
			if err != nil {
				return provider.Observation{}, err
			}
			if t == nil {
				return provider.Observation{Phase: provider.Gone}, nil
			}
			if t.GetState() == vagrant.Operation_CREATED {
				script := withVars(cleanupScript, [][2]string{{"D", p.dir(m)}})
				r, err := p.runJob(ctx, &st, "exec", []string{"/bin/sh", "-c", script}, left())
				if err != nil {
					return provider.Observation{}, err
				}
				if !r.Done {
					return p.observation(m, st, provider.Pending, "stopping", waiting("stopping Kubernetes", r)), nil
				}
			}
			st.Release = "destroy"
		case "destroy":
			r, err := p.runJob(ctx, &st, "destroy", nil, left())
			if err != nil {
				return provider.Observation{}, err
			}
			if !r.Done {
				return p.observation(m, st, provider.Pending, "destroying", waiting("vagrant destroy", r)), nil
			}
			if !r.OK {
				// Left for the next pass to try again; the machine still exists.
				return p.observation(m, st, provider.Pending, "destroying", failed("vagrant destroy", r)+"; retrying"), nil
			}
			st.Release = "delete"
		case "delete":
			if err := p.c.deleteTarget(ctx, st.Target); err != nil {
				return provider.Observation{}, fmt.Errorf("delete target: %w", err)
			}
			return provider.Observation{Phase: provider.Gone, ProviderID: st.Target}, nil
		default:
			return provider.Observation{}, fmt.Errorf("unknown release step %q", st.Release)
		}
	}
}

// Observe reads the target: a running machine is ready, a halted or vanished one is not.
func (p *Provider) Observe(ctx context.Context, m provider.Machine) (provider.Observation, error) {
	st := readProgress(m.State)
	if st.Target == "" {
		return provider.Observation{Phase: provider.Pending, Message: "not registered yet"}, nil
	}
	t, err := p.c.target(ctx, st.Target)
	if err != nil {
		return provider.Observation{}, err
	}
	if t == nil {
		return provider.Observation{Phase: provider.Gone, ProviderID: st.Target, Message: "vagrant-server no longer has the target"}, nil
	}
	short := machineState(t)
	switch t.GetState() {
	case vagrant.Operation_CREATED:
		phase := provider.Pending
		if st.Step == stepDone {
			phase = provider.Ready
		}
		return p.observation(m, st, phase, short, ""), nil
	case vagrant.Operation_HALTED, vagrant.Operation_NOT_CREATED, vagrant.Operation_DESTROYED:
		if st.Step != stepDone {
			return p.observation(m, st, provider.Pending, short, ""), nil
		}
		return p.observation(m, st, provider.Failed, short, "the machine is "+short+" (stopped outside kaas)"), nil
	}
	return p.observation(m, st, provider.Pending, short, ""), nil
}

// machineState is the runner's word for the machine (Target.Machine state), else the
// target's physical state.
func machineState(t *vagrant.Target) string {
	rec := new(vagrant.Target_Machine)
	if t.GetRecord() != nil && t.GetRecord().MessageIs(rec) && t.GetRecord().UnmarshalTo(rec) == nil {
		if s := rec.GetState().GetShortDescription(); s != "" {
			return s
		}
	}
	return t.GetState().String()
}
