package maas

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/plinth-dev/plinth/services/kaas/internal/provider"
)

// Name is the provider's name in clusters and events.
const Name = "maas"

// Options configure the provider.
type Options struct {
	// Pool and Zone constrain allocations to a MAAS resource pool and availability zone.
	Pool, Zone string
	// DistroSeries is the OS release to deploy ("" lets MAAS use its default).
	DistroSeries string
}

// Provider is the MAAS provider.
type Provider struct {
	c *Client
	o Options
}

// New returns a MAAS provider using client c.
func New(c *Client, o Options) *Provider { return &Provider{c: c, o: o} }

// Name returns "maas".
func (p *Provider) Name() string { return Name }

// progress is what the provider keeps between calls (Machine.State).
type progress struct {
	// Host is the machine's FQDN, the control plane's stable name when it is the first.
	Host string `json:"host,omitempty"`
	// Upgrade is the version an upgrade redeploys with; Step how far it got: "release",
	// "allocate", "deploy".
	Upgrade string `json:"upgrade,omitempty"`
	Step    string `json:"step,omitempty"`
}

func readProgress(b []byte) progress { return provider.ReadState[progress](b) }

func (st progress) bytes() []byte { return provider.WriteState(st) }

// agentName tags a machine with the kaas machine it serves, so that an allocation whose
// answer was lost (kaas crashed, the network failed) is found again instead of repeated.
func agentName(m provider.Machine) string { return "plinth-kaas:" + m.ClusterUID + ":" + m.Name }

// find returns the machine allocated for m: the one carrying m's agent name (and its
// system id, once known). A machine kaas released that MAAS has since given to another
// cluster (same API key, so same owner) carries another agent name and is never taken for
// m's — releasing it would pull a machine from under another cluster.
func (p *Provider) find(ctx context.Context, m provider.Machine) (Machine, bool, error) {
	filter := url.Values{"agent_name": {agentName(m)}}
	if m.ProviderID != "" {
		filter.Set("id", m.ProviderID)
	}
	ms, err := p.c.Machines(ctx, filter)
	if err != nil || len(ms) == 0 {
		return Machine{}, false, err
	}
	return ms[0], true, nil
}

// Provision allocates a machine tagged with m's instance type (once), deploys it with the
// cloud-init that runs kubeadm, and follows MAAS's status until Deployed.
func (p *Provider) Provision(ctx context.Context, m provider.Machine, b provider.Bootstrap) (provider.Observation, error) {
	st := readProgress(m.State)
	mach, found, err := p.find(ctx, m)
	if err != nil {
		return provider.Observation{}, err
	}
	if !found {
		if m.ProviderID != "" {
			return provider.Observation{Phase: provider.Failed, Message: "machine " + m.ProviderID + " is no longer allocated to kaas (released outside kaas?)"}, nil
		}
		params := url.Values{"tags": {m.InstanceType}, "agent_name": {agentName(m)},
			"comment": {fmt.Sprintf("kaas cluster %s, machine %s", m.Cluster, m.Name)}}
		if p.o.Pool != "" {
			params.Set("pool", p.o.Pool)
		}
		if p.o.Zone != "" {
			params.Set("zone", p.o.Zone)
		}
		mach, err = p.c.Allocate(ctx, params)
		if IsStatus(err, http.StatusConflict) {
			// Nothing matches now; machines may be released or added later.
			return provider.Observation{Phase: provider.Pending, Status: "waiting for a machine",
				Message: fmt.Sprintf("no Ready MAAS machine with tag %q%s", m.InstanceType, p.where())}, nil
		}
		if err != nil {
			return provider.Observation{}, err
		}
	}
	st.Host = mach.FQDN
	if st.Host == "" {
		st.Host = mach.Hostname
	}
	if mach.Status == StatusAllocated {
		if mach, err = p.deploy(ctx, m, b, mach.SystemID, st.Host); err != nil {
			return provider.Observation{}, err
		}
	}
	return p.observation(mach, st), nil
}

func (p *Provider) where() string {
	var w []string
	if p.o.Pool != "" {
		w = append(w, "pool "+p.o.Pool)
	}
	if p.o.Zone != "" {
		w = append(w, "zone "+p.o.Zone)
	}
	if len(w) == 0 {
		return ""
	}
	return " in " + strings.Join(w, ", ")
}

// deploy installs machine systemID with m's user data. The first control-plane machine names
// itself as the control plane's endpoint; the others join the endpoint's host.
func (p *Provider) deploy(ctx context.Context, m provider.Machine, b provider.Bootstrap, systemID, host string) (Machine, error) {
	cpHost := ""
	if b.Init {
		cpHost = host
	} else if b.Endpoint != "" {
		cpHost = strings.TrimSuffix(b.Endpoint, ":6443")
	}
	ud, err := UserData(m, b, cpHost)
	if err != nil {
		return Machine{}, err
	}
	params := url.Values{"user_data": {base64.StdEncoding.EncodeToString(ud)}, "agent_name": {agentName(m)}}
	if p.o.DistroSeries != "" {
		params.Set("distro_series", p.o.DistroSeries)
	}
	return p.c.Deploy(ctx, systemID, params)
}

// observation turns MAAS's view of a machine into kaas's.
func (p *Provider) observation(mach Machine, st progress) provider.Observation {
	o := provider.Observation{ProviderID: mach.SystemID, Hostname: mach.Hostname, Addresses: mach.IPAddresses,
		Status: mach.Name(), Message: mach.StatusMessage, State: st.bytes()}
	if o.Addresses == nil {
		o.Addresses = []string{}
	}
	switch mach.Status {
	case StatusDeployed:
		o.Phase, o.Message = provider.Ready, ""
	case StatusFailedDeployment, StatusBroken, StatusFailedReleasing, StatusFailedDiskErasing,
		StatusFailedCommission, StatusFailedTesting, StatusFailedEnterRescue, StatusFailedExitRescue, StatusRetired, StatusMissing:
		o.Phase = provider.Failed
		o.Message = "MAAS reports " + mach.Name()
		if mach.StatusMessage != "" {
			o.Message += ": " + mach.StatusMessage
		}
	case StatusReady, StatusNew:
		// Back in MAAS's free pool: someone released it.
		o.Phase, o.Message = provider.Gone, "MAAS has it as "+mach.Name()+", no longer allocated"
	default:
		o.Phase = provider.Pending
	}
	return o
}

// Upgrade redeploys the machine with the new version's user data: MAAS cannot run commands on
// a deployed machine, so the machine is released (without erasing its disks), allocated again
// by its system id and deployed — one machine at a time, as the reconciler calls it.
func (p *Provider) Upgrade(ctx context.Context, m provider.Machine, b provider.Bootstrap) (provider.Observation, error) {
	st := readProgress(m.State)
	if st.Upgrade != b.Version {
		st.Upgrade, st.Step = b.Version, "release"
	}
	// Between its release and its allocation the machine carries no agent name: read it by
	// system id then.
	mach, found, err := p.find(ctx, m)
	if err == nil && !found && st.Step == "allocate" {
		mach, err = p.c.Machine(ctx, m.ProviderID)
		found = err == nil
		if IsStatus(err, http.StatusNotFound) {
			err = nil
		}
	}
	if err != nil {
		return provider.Observation{}, err
	}
	if !found {
		return provider.Observation{Phase: provider.Failed, Message: "machine " + m.ProviderID + " is no longer allocated to kaas (released outside kaas?)"}, nil
	}
	switch st.Step {
	case "release":
		if mach.Status != StatusReady && mach.Status != StatusReleasing {
			if mach, err = p.c.Release(ctx, mach.SystemID, url.Values{"erase": {"false"},
				"comment": {"kaas: redeploying with Kubernetes " + b.Version}}); err != nil {
				return provider.Observation{}, err
			}
		}
		st.Step = "allocate"
		fallthrough
	case "allocate":
		if mach.Status == StatusReleasing {
			return pending(mach, st, "releasing before it is redeployed with "+b.Version), nil
		}
		if mach.Status == StatusReady {
			mach, err = p.c.Allocate(ctx, url.Values{"system_id": {mach.SystemID}, "agent_name": {agentName(m)},
				"comment": {fmt.Sprintf("kaas cluster %s, machine %s (upgrade)", m.Cluster, m.Name)}})
			if IsStatus(err, http.StatusConflict) {
				return provider.Observation{Phase: provider.Failed, ProviderID: m.ProviderID, State: st.bytes(),
					Message: "the machine was taken by someone else while it was released for the upgrade"}, nil
			}
			if err != nil {
				return provider.Observation{}, err
			}
		}
		if mach.Status != StatusAllocated {
			return p.observation(mach, st), nil
		}
		if mach, err = p.deploy(ctx, m, b, mach.SystemID, st.Host); err != nil {
			return provider.Observation{}, err
		}
		st.Step = "deploy"
	}
	return p.observation(mach, st), nil
}

func pending(mach Machine, st progress, msg string) provider.Observation {
	return provider.Observation{Phase: provider.Pending, ProviderID: mach.SystemID, Hostname: mach.Hostname,
		Addresses: mach.IPAddresses, Status: mach.Name(), Message: msg, State: st.bytes()}
}

// Release gives the machine back (its disks are erased only if MAAS is configured to) and
// reports Gone once MAAS has it Ready again, or no longer has it.
func (p *Provider) Release(ctx context.Context, m provider.Machine) (provider.Observation, error) {
	st := readProgress(m.State)
	mach, found, err := p.find(ctx, m)
	if err != nil {
		return provider.Observation{}, err
	}
	if !found {
		return provider.Observation{Phase: provider.Gone}, nil
	}
	switch mach.Status {
	case StatusReady, StatusNew:
		return provider.Observation{Phase: provider.Gone, ProviderID: mach.SystemID, Status: mach.Name()}, nil
	case StatusReleasing, StatusDiskErasing:
		return pending(mach, st, "being released"), nil
	}
	rel, err := p.c.Release(ctx, mach.SystemID, url.Values{"comment": {"kaas: machine " + m.Name + " released"}})
	if IsStatus(err, http.StatusConflict) {
		// MAAS refuses (e.g. Broken): it stays with MAAS's operators; kaas lets go of it.
		return provider.Observation{Phase: provider.Gone, ProviderID: mach.SystemID, Status: mach.Name(),
			Message: "MAAS refused to release it; left to MAAS's operators"}, nil
	}
	if err != nil {
		return provider.Observation{}, err
	}
	if rel.Status == StatusReady {
		return provider.Observation{Phase: provider.Gone, ProviderID: rel.SystemID, Status: rel.Name()}, nil
	}
	return pending(rel, st, "being released"), nil
}

// Observe reads the machine's status.
func (p *Provider) Observe(ctx context.Context, m provider.Machine) (provider.Observation, error) {
	mach, found, err := p.find(ctx, m)
	if err != nil {
		return provider.Observation{}, err
	}
	if !found {
		return provider.Observation{Phase: provider.Gone, Message: "MAAS no longer knows the machine"}, nil
	}
	return p.observation(mach, readProgress(m.State)), nil
}
