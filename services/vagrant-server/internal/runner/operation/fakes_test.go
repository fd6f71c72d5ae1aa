package operation_test

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// registry is an in-memory operation.Server: bases, projects and targets by name, enough for
// the lookups and updates operations make.
type registry struct {
	mu               sync.Mutex
	bases            map[string]*vagrant.Basis
	projects         map[string]*vagrant.Project
	targets          map[string]*vagrant.Target
	upserted         []*vagrant.Target // every UpsertTarget request's target
	failUpsertTarget error
	// beforeCreate runs before a basis or project is created: a test registers the same one
	// there, as a concurrent run of the job would.
	beforeCreate func(r *registry)
}

func newRegistry() *registry {
	return &registry{bases: map[string]*vagrant.Basis{}, projects: map[string]*vagrant.Project{}, targets: map[string]*vagrant.Target{}}
}

func (r *registry) FindBasis(_ context.Context, in *vagrant.FindBasisRequest, _ ...grpc.CallOption) (*vagrant.FindBasisResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.bases {
		if b.ResourceId == in.GetBasis().GetResourceId() || b.Name == in.GetBasis().GetName() {
			return &vagrant.FindBasisResponse{Basis: b}, nil
		}
	}
	return nil, status.Error(codes.NotFound, "basis not found")
}

func (r *registry) UpsertBasis(_ context.Context, in *vagrant.UpsertBasisRequest, _ ...grpc.CallOption) (*vagrant.UpsertBasisResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.beforeCreate != nil {
		r.beforeCreate(r)
	}
	if _, taken := r.bases[in.GetBasis().GetName()]; taken && in.GetBasis().GetResourceId() == "" {
		return nil, status.Error(codes.FailedPrecondition, "basis.name: already used by another basis")
	}
	b := proto.Clone(in.GetBasis()).(*vagrant.Basis)
	b.ResourceId = "B-" + b.Name
	r.bases[b.Name] = b
	return &vagrant.UpsertBasisResponse{Basis: b}, nil
}

func (r *registry) FindProject(_ context.Context, in *vagrant.FindProjectRequest, _ ...grpc.CallOption) (*vagrant.FindProjectResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.projects {
		if p.ResourceId == in.GetProject().GetResourceId() || p.Name == in.GetProject().GetName() {
			return &vagrant.FindProjectResponse{Project: p}, nil
		}
	}
	return nil, status.Error(codes.NotFound, "project not found")
}

func (r *registry) UpsertProject(_ context.Context, in *vagrant.UpsertProjectRequest, _ ...grpc.CallOption) (*vagrant.UpsertProjectResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.beforeCreate != nil {
		r.beforeCreate(r)
	}
	if _, taken := r.projects[in.GetProject().GetName()]; taken && in.GetProject().GetResourceId() == "" {
		return nil, status.Error(codes.FailedPrecondition, "project.name: already used by another project")
	}
	p := proto.Clone(in.GetProject()).(*vagrant.Project)
	p.ResourceId = "P-" + p.Name
	r.projects[p.Name] = p
	return &vagrant.UpsertProjectResponse{Project: p}, nil
}

func (r *registry) FindTarget(_ context.Context, in *vagrant.FindTargetRequest, _ ...grpc.CallOption) (*vagrant.FindTargetResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.targets {
		if t.ResourceId == in.GetTarget().GetResourceId() || t.Name == in.GetTarget().GetName() {
			return &vagrant.FindTargetResponse{Target: proto.Clone(t).(*vagrant.Target)}, nil
		}
	}
	return nil, status.Error(codes.NotFound, "target not found")
}

// UpsertTarget merges the set fields into the stored target, as vagrant-server does.
func (r *registry) UpsertTarget(_ context.Context, in *vagrant.UpsertTargetRequest, _ ...grpc.CallOption) (*vagrant.UpsertTargetResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failUpsertTarget != nil {
		return nil, r.failUpsertTarget
	}
	r.upserted = append(r.upserted, proto.Clone(in.GetTarget()).(*vagrant.Target))
	for _, t := range r.targets {
		if t.ResourceId == in.GetTarget().GetResourceId() {
			proto.Merge(t, in.GetTarget())
			return &vagrant.UpsertTargetResponse{Target: t}, nil
		}
	}
	return nil, status.Error(codes.NotFound, "target not found")
}

func (r *registry) addTarget(t *vagrant.Target) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.targets[t.ResourceId] = t
}

func (r *registry) lastUpsert() *vagrant.Target {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.upserted) == 0 {
		return nil
	}
	return r.upserted[len(r.upserted)-1]
}

// recorder is an Output that keeps the events.
type recorder struct {
	mu     sync.Mutex
	events []*vagrant.GetJobStreamResponse_Terminal_Event
}

func (r *recorder) Event(ev *vagrant.GetJobStreamResponse_Terminal_Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

// raw returns the Raw output of one stream, concatenated.
func (r *recorder) raw(stderr bool) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s string
	for _, ev := range r.events {
		if raw := ev.GetRaw(); raw != nil && raw.Stderr == stderr {
			s += string(raw.Data)
		}
	}
	return s
}

// lines returns the Line messages.
func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.events {
		if l := ev.GetLine(); l != nil {
			out = append(out, l.Msg)
		}
	}
	return out
}
