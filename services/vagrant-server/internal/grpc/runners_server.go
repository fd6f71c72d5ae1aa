package grpc

import (
	"context"
	"encoding/base64"

	"google.golang.org/protobuf/types/known/timestamppb"

	vagrantv1 "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// Page sizes of ListRunners: a page costs one indexed query whatever its place in the list.
const (
	defaultRunnersPage = 100
	maxRunnersPage     = 500
	// A page token is an encoded runner id (at most 128 bytes).
	maxRunnersPageToken = 256
)

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
	size := int(req.GetPageSize())
	switch {
	case size < 0 || size > maxRunnersPage:
		return nil, r.s.fail(ctx, &input.Error{Field: "page_size", Reason: "must be between 0 (the default, 100) and 500"}, "list runners")
	case size == 0:
		size = defaultRunnersPage
	}
	after, err := decodeRunnersPageToken(req.GetPageToken())
	if err != nil {
		return nil, r.s.fail(ctx, err, "list runners")
	}
	// One more than the page tells whether another page follows.
	listed, err := r.s.jobs.ListRunners(ctx, after, size+1)
	if err != nil {
		return nil, r.s.fail(ctx, err, "list runners")
	}
	resp := &vagrantv1.ListRunnersResponse{}
	if len(listed) > size {
		listed = listed[:size]
		resp.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(listed[size-1].Runner.GetId()))
	}
	for _, lr := range listed {
		resp.Runners = append(resp.Runners, runnerView(lr))
	}
	return resp, nil
}

func decodeRunnersPageToken(tok string) (string, error) {
	if tok == "" {
		return "", nil
	}
	bad := &input.Error{Field: "page_token", Reason: "not a token this server returned; pass next_page_token as it was"}
	if len(tok) > maxRunnersPageToken {
		return "", bad
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) == 0 {
		return "", bad
	}
	return string(b), nil
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
	return service == vagrantv1.RunnerService_ServiceDesc.ServiceName
}
