package vagranttoken_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	vagrantpb "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/ports"
	"github.com/plinth-dev/plinth/libs/platform/testenv"

	"github.com/plinth-dev/plinth/deploy/internal/vagranttoken"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestKaasTokenIsAnOperators: the tokens make up and make kube-up hand out, got from a real
// vagrant-server as they get them — the runner's by BootstrapToken, kaas's by Login with
// Operator — are an admin's and an operator's: kaas's works the queue (issue #36: it used to
// have no role, and anyone reading it was everything) but cannot make tokens.
func TestKaasTokenIsAnOperators(t *testing.T) {
	bin := testenv.Binary(t, "github.com/plinth-dev/plinth/services/vagrant-server/cmd/vagrant-server")
	p, err := ports.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", p[0])
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PLINTH_DATABASE_URL="+testenv.DB(t).URL, "PLINTH_NATS_URL="+testenv.NATS(t),
		"PLINTH_GRPC_ADDR="+addr, "PLINTH_ADMIN_ADDR=off")
	var out testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var runner string
	for {
		runner, err = vagranttoken.Bootstrap(ctx, conn)
		if err == nil {
			break
		}
		if ctx.Err() != nil || errors.Is(err, vagranttoken.ErrBootstrapped) {
			t.Fatalf("bootstrap: %v\n%s", err, out.String())
		}
		time.Sleep(100 * time.Millisecond) // the server is starting
	}
	if _, err := vagranttoken.Bootstrap(ctx, conn); !errors.Is(err, vagranttoken.ErrBootstrapped) {
		t.Fatalf("a second bootstrap: %v, want ErrBootstrapped", err)
	}
	kaas, err := vagranttoken.Login(ctx, conn, runner, vagranttoken.Operator)
	if err != nil {
		t.Fatal(err)
	}
	api := vagrantpb.NewVagrantClient(conn)
	with := func(token string) context.Context {
		return metadata.NewOutgoingContext(ctx, metadata.Pairs("client-api-protocol", "1,1", "authorization", token))
	}
	if _, err := api.QueueJob(with(kaas), &vagrantpb.QueueJobRequest{Job: &vagrantpb.Job{
		TargetRunner: &vagrantpb.Ref_Runner{Target: &vagrantpb.Ref_Runner_Id{Id: &vagrantpb.Ref_RunnerId{Id: "kaas-test"}}},
		Operation:    &vagrantpb.Job_Noop_{Noop: &vagrantpb.Job_Noop{}},
	}, ExpiresIn: "1m"}); err != nil {
		t.Fatalf("kaas's token queueing a job: %v", err)
	}
	if _, err := api.GenerateLoginToken(with(kaas), &emptypb.Empty{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("kaas's token making a token: %v, want PermissionDenied (an operator's)", err)
	}
	if _, err := api.GenerateLoginToken(with(runner), &emptypb.Empty{}); err != nil {
		t.Fatalf("the runner's (first) token making a token: %v", err)
	}
}
