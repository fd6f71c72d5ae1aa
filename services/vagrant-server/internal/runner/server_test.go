package runner_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// testServer is a minimal vagrant-server for the runner's protocol: it checks the protocol
// header and token, records registrations, hands out the jobs the test queues, one per
// RunnerJobStream, records everything the runner sends for them, and sends the cancels the
// test asks for. It is not the real queue; it tests what the runner says on the wire.
type testServer struct {
	vagrant.UnimplementedVagrantServer
	token string

	jobs       chan *vagrant.Job
	events     chan *vagrant.RunnerJobStreamRequest
	cancels    chan *vagrant.RunnerJobStreamResponse_JobCancel
	registered chan *vagrant.Runner
	dropJob    chan struct{} // closing the running job's stream from the server side

	mu          sync.Mutex
	configCalls int
	jobCalls    int
	failConfig  int // the first N RunnerConfig calls fail with Unavailable
	failJob     int // the first N RunnerJobStream calls fail with Unavailable
	requests    []string
	configVars  []*vagrant.ConfigVar
	targets     map[string]*vagrant.Target
	upserts     []*vagrant.Target
	// assigned and running hold each handed-out job's runner, and whether its ack was
	// recorded, as GetJob reports them.
	assigned map[string]string
	running  map[string]bool
	// loseAcks makes the server "die" after an ack arrives, before recording it: the stream
	// breaks a moment later, and the job stays WAITING.
	loseAcks bool
	getJobs  int // GetJob calls
}

func newTestServer(t *testing.T, token string) (*testServer, string) {
	t.Helper()
	s := &testServer{
		token:      token,
		jobs:       make(chan *vagrant.Job, 10),
		events:     make(chan *vagrant.RunnerJobStreamRequest, 1000),
		cancels:    make(chan *vagrant.RunnerJobStreamResponse_JobCancel, 1),
		registered: make(chan *vagrant.Runner, 10),
		dropJob:    make(chan struct{}, 1),
		targets:    map[string]*vagrant.Target{},
		assigned:   map[string]string{},
		running:    map[string]bool{},
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(s.unaryGuard), grpc.StreamInterceptor(s.streamGuard))
	vagrant.RegisterVagrantServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return s, lis.Addr().String()
}

// guard requires what vagrant-server requires: client-api-protocol, and the login token
// (raw) except for GetVersionInfo.
func (s *testServer) guard(ctx context.Context, method string) error {
	if method == vagrant.Vagrant_GetVersionInfo_FullMethodName {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("client-api-protocol"); len(v) != 1 || v[0] != "1,1" {
		return status.Errorf(codes.InvalidArgument, "client-api-protocol is %q", v)
	}
	if v := md.Get("authorization"); len(v) != 1 || v[0] != s.token {
		return status.Error(codes.Unauthenticated, "invalid authentication token")
	}
	return nil
}

func (s *testServer) unaryGuard(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := s.guard(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (s *testServer) streamGuard(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := s.guard(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return h(srv, ss)
}

func (s *testServer) GetVersionInfo(context.Context, *emptypb.Empty) (*vagrant.GetVersionInfoResponse, error) {
	v := &vagrant.VersionInfo_ProtocolVersion{Minimum: 1, Current: 1}
	return &vagrant.GetVersionInfoResponse{Info: &vagrant.VersionInfo{Api: v, Entrypoint: v}}, nil
}

func (s *testServer) RunnerConfig(stream grpc.BidiStreamingServer[vagrant.RunnerConfigRequest, vagrant.RunnerConfigResponse]) error {
	s.mu.Lock()
	s.configCalls++
	fail := s.configCalls <= s.failConfig
	vars := s.configVars
	s.mu.Unlock()
	if fail {
		return status.Error(codes.Unavailable, "test: not yet")
	}
	req, err := stream.Recv()
	if err != nil {
		return err
	}
	if req.GetOpen().GetRunner() == nil {
		return status.Error(codes.InvalidArgument, "first message must be open with a runner")
	}
	s.registered <- req.GetOpen().GetRunner()
	if err := stream.Send(&vagrant.RunnerConfigResponse{Config: &vagrant.RunnerConfig{ConfigVars: vars}}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func (s *testServer) RunnerJobStream(stream grpc.BidiStreamingServer[vagrant.RunnerJobStreamRequest, vagrant.RunnerJobStreamResponse]) error {
	s.mu.Lock()
	s.jobCalls++
	fail := s.jobCalls <= s.failJob
	s.mu.Unlock()
	if fail {
		return status.Error(codes.Unavailable, "test: not yet")
	}
	req, err := stream.Recv()
	if err != nil {
		return err
	}
	if req.GetRequest() == nil {
		return status.Error(codes.InvalidArgument, "first message must be a request")
	}
	s.mu.Lock()
	s.requests = append(s.requests, req.GetRequest().GetRunnerId())
	s.mu.Unlock()
	var job *vagrant.Job
	select {
	case job = <-s.jobs:
	case <-stream.Context().Done():
		return nil
	}
	s.mu.Lock()
	s.assigned[job.GetId()], s.running[job.GetId()] = req.GetRequest().GetRunnerId(), false
	s.mu.Unlock()
	if err := stream.Send(&vagrant.RunnerJobStreamResponse{Event: &vagrant.RunnerJobStreamResponse_Assignment{
		Assignment: &vagrant.RunnerJobStreamResponse_JobAssignment{Job: job}}}); err != nil {
		return err
	}
	received := make(chan *vagrant.RunnerJobStreamRequest)
	failed := make(chan error, 1)
	go func() {
		for {
			r, err := stream.Recv()
			if err != nil {
				failed <- err
				return
			}
			received <- r
		}
	}()
	for {
		select {
		case c := <-s.cancels:
			if err := stream.Send(&vagrant.RunnerJobStreamResponse{Event: &vagrant.RunnerJobStreamResponse_Cancel{Cancel: c}}); err != nil {
				return err
			}
		case <-s.dropJob:
			return status.Error(codes.Unavailable, "test: server going away")
		case r := <-received:
			if r.GetAck() != nil {
				s.mu.Lock()
				lose := s.loseAcks
				s.running[job.GetId()] = !lose
				s.mu.Unlock()
				if lose {
					time.Sleep(300 * time.Millisecond) // long enough for a runner that does not wait to start
					return status.Error(codes.Unavailable, "test: server died before recording the ack")
				}
			}
			s.events <- r
			if r.GetComplete() != nil || r.GetError() != nil {
				return nil
			}
		case err := <-failed:
			return err
		}
	}
}

// GetJob reports a handed-out job as WAITING, or RUNNING once its ack was recorded.
func (s *testServer) GetJob(_ context.Context, req *vagrant.GetJobRequest) (*vagrant.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.getJobs++
	runner, ok := s.assigned[req.GetJobId()]
	if !ok {
		return nil, status.Error(codes.NotFound, "job not found")
	}
	state := vagrant.Job_WAITING
	if s.running[req.GetJobId()] {
		state = vagrant.Job_RUNNING
	}
	return &vagrant.Job{Id: req.GetJobId(), State: state, AssignedRunner: &vagrant.Ref_RunnerId{Id: runner}}, nil
}

func (s *testServer) FindTarget(_ context.Context, req *vagrant.FindTargetRequest) (*vagrant.FindTargetResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.targets[req.GetTarget().GetResourceId()]; ok {
		return &vagrant.FindTargetResponse{Target: proto.Clone(t).(*vagrant.Target)}, nil
	}
	return nil, status.Error(codes.NotFound, "target not found")
}

func (s *testServer) UpsertTarget(_ context.Context, req *vagrant.UpsertTargetRequest) (*vagrant.UpsertTargetResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.targets[req.GetTarget().GetResourceId()]
	if !ok {
		return nil, status.Error(codes.NotFound, "target not found")
	}
	s.upserts = append(s.upserts, proto.Clone(req.GetTarget()).(*vagrant.Target))
	proto.Merge(t, req.GetTarget())
	return &vagrant.UpsertTargetResponse{Target: t}, nil
}

func (s *testServer) calls() (config, job int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.configCalls, s.jobCalls
}
