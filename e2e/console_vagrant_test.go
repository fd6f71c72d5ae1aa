package e2e

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	vagrantpb "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// offlineRunnerForConsole registers a runner through the gateway as Vagrant's runners do
// (RunnerConfig, with the launcher's runner token) and ends its stream, so vagrant-server
// lists it offline: the Vagrant page offers it in the job form's runner choice, and a job
// for it stays queued until the browser test cancels it. It returns the runner's id.
func offlineRunnerForConsole(t *testing.T, gateway, vagrantToken string) string {
	t.Helper()
	conn, err := grpc.NewClient(gateway, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial gateway %s: %v", gateway, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(vagrantCtx(context.Background(), vagrantToken), 30*time.Second)
	defer cancel()
	id := "console-offline-" + randomHex(t, 4)
	stream, err := vagrantpb.NewVagrantClient(conn).RunnerConfig(ctx)
	if err != nil {
		t.Fatalf("RunnerConfig through the gateway: %v", err)
	}
	if err := stream.Send(&vagrantpb.RunnerConfigRequest{Event: &vagrantpb.RunnerConfigRequest_Open_{Open: &vagrantpb.RunnerConfigRequest_Open{
		Runner: &vagrantpb.Runner{Id: id, ByIdOnly: true},
	}}}); err != nil {
		t.Fatalf("RunnerConfig open: %v", err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatalf("RunnerConfig: no configuration for runner %s: %v", id, err)
	}
	// Ending the stream is the runner going away: vagrant-server marks it offline.
	_ = stream.CloseSend()
	cancel()
	return id
}
