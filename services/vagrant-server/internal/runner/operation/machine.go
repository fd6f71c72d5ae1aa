package operation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
)

// machineIDLen keeps derived ids short: interface names built from them have 15 characters.
const machineIDLen = 10

// machine is a target and the provider machine behind it.
type machine struct {
	target   *vagrant.Target
	provider provider.Provider
	id       string
	record   *vagrant.Target_Machine // the target's record when it holds a Target.Machine
}

// machine looks the target up on the server and picks its provider: the job's PROVIDER
// component when it names one, else the target's provider, else the runner's default. The
// machine id is the one the target's record holds, else derived from the target's resource id,
// so every runner maps one target to the same machine.
func (e *Executor) machine(ctx context.Context, ref *sdk.Ref_Target, comp *vagrant.Component) (*machine, error) {
	resp, err := e.server.FindTarget(ctx, &vagrant.FindTargetRequest{Target: &vagrant.Target{
		ResourceId: ref.GetResourceId(), Name: ref.GetName(), Project: ref.GetProject()}})
	if status.Code(err) == codes.NotFound || (err == nil && resp.GetTarget() == nil) {
		return nil, status.Errorf(codes.FailedPrecondition,
			"target %s is not registered with the server: upsert it (UpsertTarget) before running commands on it", targetName(ref))
	}
	if err != nil {
		return nil, serverError("look up target "+targetName(ref), err)
	}
	t := resp.GetTarget()
	name := e.defaultProvider
	switch {
	case comp.GetType() == vagrant.Component_PROVIDER && comp.GetName() != "":
		name = comp.GetName()
	case t.GetProvider() != "":
		name = t.GetProvider()
	}
	p, ok := e.providers.Get(name)
	if !ok {
		return nil, status.Errorf(codes.FailedPrecondition,
			"target %s uses provider %q, which this runner does not have (it has: %v)", targetName(ref), name, e.providers.Names())
	}
	m := &machine{target: t, provider: p}
	if rec := new(vagrant.Target_Machine); t.GetRecord() != nil && t.GetRecord().MessageIs(rec) && t.GetRecord().UnmarshalTo(rec) == nil {
		m.record = rec
	}
	m.id = m.record.GetId()
	if m.id == "" || p.ValidID(m.id) != nil {
		sum := sha256.Sum256([]byte(t.GetResourceId()))
		m.id = hex.EncodeToString(sum[:])[:machineIDLen]
	}
	if err := p.ValidID(m.id); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "provider %s cannot name a machine for target %s: %v", name, targetName(ref), err)
	}
	return m, nil
}

// report writes the machine's state onto its target: state, provider, and the record (a packed
// Target.Machine, as Vagrant stores it) with the provider's machine id and state.
func (e *Executor) report(ctx context.Context, m *machine, st provider.State, destroyed bool) error {
	rec := &vagrant.Target_Machine{
		Id:  m.id,
		Uid: e.uid,
		Box: m.record.GetBox(),
		State: &sdk.Args_Target_Machine_State{
			Id: st.ID, ShortDescription: st.Short, LongDescription: st.Long,
		},
	}
	if m.record.GetUid() != "" {
		rec.Uid = m.record.GetUid() // uid names who created the machine
	}
	packed, err := anypb.New(rec)
	if err != nil {
		return status.Errorf(codes.Internal, "pack machine record: %v", err)
	}
	_, err = e.server.UpsertTarget(ctx, &vagrant.UpsertTargetRequest{Target: &vagrant.Target{
		ResourceId: m.target.GetResourceId(),
		Project:    m.target.GetProject(),
		State:      physicalState(st, destroyed),
		Provider:   m.provider.Name(),
		Record:     packed,
	}})
	if err != nil {
		return serverError("report the machine state of target "+m.target.GetName(), err)
	}
	return nil
}

// targetName names a target reference in messages.
func targetName(ref *sdk.Ref_Target) string {
	switch {
	case ref.GetName() != "" && ref.GetProject().GetName() != "":
		return fmt.Sprintf("%q of project %q", ref.GetName(), ref.GetProject().GetName())
	case ref.GetName() != "":
		return fmt.Sprintf("%q", ref.GetName())
	}
	return ref.GetResourceId()
}

// serverError keeps the code of a failed call to the server and says what the runner was doing.
func serverError(doing string, err error) error {
	st := status.Convert(err)
	return status.Errorf(st.Code(), "%s: %s", doing, st.Message())
}
