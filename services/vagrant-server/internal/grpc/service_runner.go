package grpc

import (
	"context"

	"google.golang.org/grpc"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// GetRunner is not served yet (see notYet).
func (s *Server) GetRunner(context.Context, *vagrant.GetRunnerRequest) (*vagrant.Runner, error) {
	return nil, notYet("GetRunner")
}

// RunnerConfig is not served yet (see notYet).
func (s *Server) RunnerConfig(grpc.BidiStreamingServer[vagrant.RunnerConfigRequest, vagrant.RunnerConfigResponse]) error {
	return notYet("RunnerConfig")
}

// RunnerJobStream is not served yet (see notYet).
func (s *Server) RunnerJobStream(grpc.BidiStreamingServer[vagrant.RunnerJobStreamRequest, vagrant.RunnerJobStreamResponse]) error {
	return notYet("RunnerJobStream")
}
