package grpc

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	vagrantv1 "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// runnersPaging is ListRunners' paging: a page costs one indexed query whatever its place in
// the list; the token is the page's last runner id (at most 128 bytes).
var runnersPaging = input.Paging{Default: 100, Max: 500, MaxKey: 128, Call: "ListRunners"}

// RunnersServer serves plinth.vagrant.v1.RunnerService, Plinth's read view of the runners.
// Its calls are authenticated with Plinth tokens (Server.Authenticate), not vagrant ones.
type RunnersServer struct {
	vagrantv1.UnimplementedRunnerServiceServer
	s *Server
}

// Runners returns the plinth.vagrant.v1.RunnerService of this server.
func (s *Server) Runners() *RunnersServer { return &RunnersServer{s: s} }

// ListRunners lists registered runners by id, a page at a time.
func (r *RunnersServer) ListRunners(ctx context.Context, req *vagrantv1.ListRunnersRequest) (*vagrantv1.ListRunnersResponse, error) {
	size, err := runnersPaging.Size(req.GetPageSize())
	if err != nil {
		return nil, toStatus(ctx, r.s.log, err, "doing", "list runners")
	}
	after, err := runnersPaging.Key(req.GetPageToken(), nil)
	if err != nil {
		return nil, toStatus(ctx, r.s.log, err, "doing", "list runners")
	}
	listed, err := r.s.jobs.ListRunners(ctx, after, size+1)
	if err != nil {
		return nil, toStatus(ctx, r.s.log, err, "doing", "list runners")
	}
	listed, next := input.Page(listed, size, func(lr jobqueue.ListedRunner) string { return lr.Runner.GetId() })
	resp := &vagrantv1.ListRunnersResponse{NextPageToken: next}
	for _, lr := range listed {
		resp.Runners = append(resp.Runners, runnerView(lr))
	}
	return resp, nil
}

func runnerView(lr jobqueue.ListedRunner) *vagrantv1.Runner {
	v := &vagrantv1.Runner{
		Id:        lr.Runner.GetId(),
		ByIdOnly:  lr.Runner.GetByIdOnly(),
		Online:    lr.Online,
		FirstSeen: timestamppb.New(lr.FirstSeen),
		LastSeen:  timestamppb.New(lr.LastSeen),
	}
	for _, c := range lr.Runner.GetComponents() {
		v.Components = append(v.Components, &vagrantv1.Component{Type: c.GetType().String(), Name: c.GetName()})
	}
	if j := lr.Job; j != nil {
		v.CurrentJob = &vagrantv1.RunnerJob{Id: j.ID, Operation: j.Operation, State: j.State.String()}
		if !j.AssignTime.IsZero() {
			v.CurrentJob.AssignTime = timestamppb.New(j.AssignTime)
		}
	}
	return v
}

// isPlinthService reports whether service is one of Plinth's own APIs served here (not
// upstream's hashicorp.vagrant.*), whose callers carry Plinth tokens.
func isPlinthService(service string) bool {
	return service == vagrantv1.RunnerService_ServiceDesc.ServiceName ||
		service == vagrantv1.SessionTokenService_ServiceDesc.ServiceName
}
