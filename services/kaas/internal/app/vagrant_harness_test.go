package app_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/kaas/internal/app"
)

// vagrantEnv is a real vagrant-server and a vagrant-runner whose netns machines live on a
// bridge and subnet of this test's own.
type vagrantEnv struct {
	addr, token string
	client      vagrant.VagrantClient
	bridge      string
	binDir      string
	// db is vagrant-server's schema: its jobs and job_output tables.
	db testenv.Database
}

// requireNetns skips (fails under PLINTH_TEST_STRICT=1) where netns machines or a
// Kubernetes control plane cannot run.
func requireNetns(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "netns machines need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		if _, err := os.Stat("/usr/sbin/ip"); err != nil {
			testenv.SkipOrFail(t, "netns machines need iproute2 (ip)")
		}
	}
	for _, tool := range []string{"/usr/bin/etcd", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.SkipOrFail(t, tool+" is not installed (apt-get install etcd-server curl)")
		}
	}
	dir, err := repoBin()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"kube-apiserver-v1.32.13", "kube-apiserver-v1.33.13", "kube-controller-manager-v1.32.13", "kube-controller-manager-v1.33.13", "kwok"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			testenv.SkipOrFail(t, fmt.Sprintf("%s is not built: run `make tools-k8s`", b))
		}
	}
	return dir
}

// repoBin is the repository's bin/ (beside go.work).
func repoBin() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return filepath.Abs(filepath.Join(dir, "bin"))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.work above the test's directory")
		}
		dir = parent
	}
}

// freeSubnet picks a /24 in 10.214.0.0-10.250.255.0 that no host interface uses.
func freeSubnet(t *testing.T) string {
	out, err := exec.Command("ip", "-4", "-o", "addr").Output()
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		a, _ := rand.Int(rand.Reader, big.NewInt(37))
		b, _ := rand.Int(rand.Reader, big.NewInt(256))
		prefix := fmt.Sprintf("10.%d.%d.", 214+a.Int64(), b.Int64())
		if !strings.Contains(string(out), " "+prefix) {
			return prefix + "0/24"
		}
	}
	t.Fatal("no free /24 for the test's machines")
	return ""
}

func startVagrant(t *testing.T, e *env) *vagrantEnv {
	t.Helper()
	v := &vagrantEnv{binDir: requireNetns(t), db: testenv.DB(t)}
	server := startProc(t, "vagrant-server", []string{"PLINTH_DATABASE_URL=" + v.db.URL, "PLINTH_NATS_URL=" + e.natsURL,
		"PLINTH_GRPC_ADDR=127.0.0.1:0", "PLINTH_ADMIN_ADDR=off"}, true)
	v.addr = server.Addr()
	conn, err := grpc.NewClient(v.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	v.client = vagrant.NewVagrantClient(conn)
	ctx := metadata.AppendToOutgoingContext(ctxT(t, 30*time.Second), "client-api-protocol", "1,1")
	tok, err := v.client.BootstrapToken(ctx, &emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	v.token = tok.GetToken()
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	v.bridge = "pk" + hex.EncodeToString(suffix)
	runner := startProc(t, "vagrant-runner", []string{"PLINTH_VAGRANT_SERVER_ADDR=" + v.addr, "PLINTH_VAGRANT_TOKEN=" + v.token,
		"PLINTH_VAGRANT_RUNNER_STATE_DIR=" + t.TempDir(), "PLINTH_ADMIN_ADDR=off", "PLINTH_VAGRANT_RUNNER_HEARTBEAT=2s",
		"PLINTH_VAGRANT_NETNS_BRIDGE=" + v.bridge, "PLINTH_VAGRANT_NETNS_SUBNET=" + freeSubnet(t), "PLINTH_SHUTDOWN_TIMEOUT=5s",
		// The machines are sandboxed: they see the kube binaries read-only at the same path.
		"PLINTH_VAGRANT_NETNS_SHARE=" + v.binDir}, false)
	// Runs before the runner and the server stop (cleanups run last-registered first): every
	// machine a failed test left behind is destroyed, then the test's bridge goes.
	t.Cleanup(func() {
		v.destroyAll(t)
		_ = exec.Command("ip", "link", "del", v.bridge).Run()
		// Neither the server nor the runner may log a key (the bootstrap jobs carry them
		// sealed for their machine).
		for _, p := range []*proc{server, runner} {
			for _, marker := range []string{"PRIVATE KEY", "LS0tLS1CRUdJTiBFQyBQUklWQVRF"} {
				if strings.Contains(p.logs.String(), marker) {
					t.Errorf("%s logged key material", p.name)
				}
			}
		}
	})
	return v
}

// ctx carries what a Vagrant client sends.
func (v *vagrantEnv) ctx(t *testing.T) context.Context {
	return metadata.AppendToOutgoingContext(ctxT(t, 60*time.Second), "client-api-protocol", "1,1", "authorization", v.token)
}

// targets lists the registered targets.
func (v *vagrantEnv) targets(t *testing.T) []*vagrant.Target {
	r, err := v.client.ListTargets(v.ctx(t), &emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*vagrant.Target
	for _, ref := range r.GetTargets() {
		tr, err := v.client.GetTarget(v.ctx(t), &vagrant.GetTargetRequest{Target: ref})
		if err == nil {
			out = append(out, tr.GetTarget())
		}
	}
	return out
}

// destroyAll destroys every target's machine (after a failed test).
func (v *vagrantEnv) destroyAll(t *testing.T) {
	for _, tg := range v.targets(t) {
		q, err := v.client.QueueJob(v.ctx(t), &vagrant.QueueJobRequest{ExpiresIn: "1m", Job: &vagrant.Job{
			Scope:        &vagrant.Job_Target{Target: &sdk.Ref_Target{ResourceId: tg.GetResourceId()}},
			TargetRunner: &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Any{Any: &vagrant.Ref_RunnerAny{}}},
			Operation:    &vagrant.Job_Command{Command: &vagrant.Job_CommandOp{Command: "destroy"}}}})
		if err != nil {
			t.Logf("cleanup: destroy %s: %v", tg.GetName(), err)
			continue
		}
		stream, err := v.client.GetJobStream(v.ctx(t), &vagrant.GetJobStreamRequest{JobId: q.GetJobId()})
		if err != nil {
			continue
		}
		for {
			ev, err := stream.Recv()
			if err != nil || ev.GetComplete() != nil {
				break
			}
		}
	}
}

// config is kaas with the vagrant provider on this vagrant-server.
func (v *vagrantEnv) config(t *testing.T, e *env) app.Config {
	return e.config(t, func(c *app.Config) {
		c.Provider = "vagrant"
		c.Vagrant.Addr, c.Vagrant.Token, c.Vagrant.KubeBinDir = v.addr, v.token, v.binDir
		c.Vagrant.MachineDir = t.TempDir()
		c.Vagrant.Wait = 5 * time.Second
		c.Poll = 200 * time.Millisecond
		c.CallTimeout = time.Minute
	})
}
