package grpc

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// notYet answers the calls of the job queue, its streams and runners, which this build of
// the server does not serve yet: Unimplemented (retrying will not help) saying so.
func notYet(method string) error {
	return status.Errorf(codes.Unimplemented,
		"%s is not served by this vagrant-server yet: the job queue, job/log streams and runners are not in this build", method)
}

// QueueJob is not served yet (see notYet).
func (s *Server) QueueJob(context.Context, *vagrant.QueueJobRequest) (*vagrant.QueueJobResponse, error) {
	return nil, notYet("QueueJob")
}

// CancelJob is not served yet (see notYet).
func (s *Server) CancelJob(context.Context, *vagrant.CancelJobRequest) (*emptypb.Empty, error) {
	return nil, notYet("CancelJob")
}

// GetJob is not served yet (see notYet).
func (s *Server) GetJob(context.Context, *vagrant.GetJobRequest) (*vagrant.Job, error) {
	return nil, notYet("GetJob")
}

// XListJobs (_ListJobs) is not served yet (see notYet).
func (s *Server) XListJobs(context.Context, *vagrant.ListJobsRequest) (*vagrant.ListJobsResponse, error) {
	return nil, notYet("_ListJobs")
}

// ValidateJob is not served yet (see notYet).
func (s *Server) ValidateJob(context.Context, *vagrant.ValidateJobRequest) (*vagrant.ValidateJobResponse, error) {
	return nil, notYet("ValidateJob")
}

// GetJobStream is not served yet (see notYet).
func (s *Server) GetJobStream(*vagrant.GetJobStreamRequest, grpc.ServerStreamingServer[vagrant.GetJobStreamResponse]) error {
	return notYet("GetJobStream")
}

// PruneOldJobs is not served yet (see notYet).
func (s *Server) PruneOldJobs(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	return nil, notYet("PruneOldJobs")
}
