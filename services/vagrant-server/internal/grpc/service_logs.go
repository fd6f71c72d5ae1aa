package grpc

import (
	"google.golang.org/grpc"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// GetLogStream is not served yet (see notYet): it streams the output of jobs, which come
// with the job queue.
func (s *Server) GetLogStream(*vagrant.GetLogStreamRequest, grpc.ServerStreamingServer[vagrant.LogBatch]) error {
	return notYet("GetLogStream")
}
