// Package vagrant is kaas's machine provider on the suite's own vagrant-server: machines are
// targets that kaas registers and vagrant-runners bring up (on a runner with the netns
// provider, a machine is a network namespace on a private bridge). kaas queues the runners'
// jobs — up, an address probe, the bootstrap (exec), destroy — and follows each through
// GetJobStream. The bootstrap of a control-plane machine starts etcd, kube-apiserver and
// kube-controller-manager bound to the machine's address with the cluster's certificates;
// every machine registers its Node and runs kwok, which keeps the Node Ready in place of a
// kubelet (the Node is labelled and tainted as simulated). Only vagrant-server's gRPC API is
// used.
package vagrant

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// protocolHeader is the version range every non-version call must announce (Vagrant's API 1).
const protocolHeader = "1,1"

// TokenSource returns the login token for each call: the configured token, else the
// content of the token file (reread every call, so a token written later is picked up).
func TokenSource(token, file string) func() (string, error) {
	return func() (string, error) {
		if token != "" {
			return token, nil
		}
		if file == "" {
			return "", errors.New("no vagrant-server login token configured")
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("read the vagrant-server token file: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" || len(t) > input.MaxToken {
			return "", errors.New("the vagrant-server token file holds no usable token")
		}
		return t, nil
	}
}

// Client calls vagrant-server as a Vagrant client does: protocol header and login token on
// every call.
type Client struct {
	api    vagrant.VagrantClient
	token  func() (string, error)
	runner string
}

// NewClient uses conn with the token from token. Jobs go to runner, a runner id (a
// by-id-only id reserved for kaas: provisioning never waits behind other clients' jobs), or,
// when runner is "", to any runner.
func NewClient(conn grpc.ClientConnInterface, token func() (string, error), runner string) *Client {
	return &Client{api: vagrant.NewVagrantClient(conn), token: token, runner: runner}
}

// targetRunner is whom the client's jobs are for.
func (c *Client) targetRunner() *vagrant.Ref_Runner {
	if c.runner != "" {
		return &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Id{Id: &vagrant.Ref_RunnerId{Id: c.runner}}}
	}
	return &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Any{Any: &vagrant.Ref_RunnerAny{}}}
}

func (c *Client) ctx(ctx context.Context) (context.Context, error) {
	t, err := c.token()
	if err != nil {
		return nil, err
	}
	return metadata.AppendToOutgoingContext(ctx, "client-api-protocol", protocolHeader, "authorization", t), nil
}

// ensureBasis finds or registers basis name at path.
func (c *Client) ensureBasis(ctx context.Context, name, path string) (string, error) {
	ctx, err := c.ctx(ctx)
	if err != nil {
		return "", err
	}
	find := func() (string, error) {
		r, err := c.api.FindBasis(ctx, &vagrant.FindBasisRequest{Basis: &vagrant.Basis{Name: name}})
		return r.GetBasis().GetResourceId(), err
	}
	id, err := find()
	if status.Code(err) != codes.NotFound {
		return id, err
	}
	r, err := c.api.UpsertBasis(ctx, &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{Name: name, Path: path}})
	if status.Code(err) == codes.FailedPrecondition {
		return find() // created by a concurrent call
	}
	return r.GetBasis().GetResourceId(), err
}

// ensureProject finds or registers project name at path in basis.
func (c *Client) ensureProject(ctx context.Context, basis, name, path string) (string, error) {
	ctx, err := c.ctx(ctx)
	if err != nil {
		return "", err
	}
	ref := &sdk.Ref_Basis{ResourceId: basis}
	find := func() (string, error) {
		r, err := c.api.FindProject(ctx, &vagrant.FindProjectRequest{Project: &vagrant.Project{Name: name, Basis: ref}})
		return r.GetProject().GetResourceId(), err
	}
	id, err := find()
	if status.Code(err) != codes.NotFound {
		return id, err
	}
	r, err := c.api.UpsertProject(ctx, &vagrant.UpsertProjectRequest{Project: &vagrant.Project{Name: name, Path: path, Basis: ref}})
	if status.Code(err) == codes.FailedPrecondition {
		return find()
	}
	return r.GetProject().GetResourceId(), err
}

// upsertTarget registers target name in project (an existing one of that name is updated).
func (c *Client) upsertTarget(ctx context.Context, project, name, providerName string) (*vagrant.Target, error) {
	ctx, err := c.ctx(ctx)
	if err != nil {
		return nil, err
	}
	r, err := c.api.UpsertTarget(ctx, &vagrant.UpsertTargetRequest{Target: &vagrant.Target{Name: name,
		Project: &sdk.Ref_Project{ResourceId: project}, Provider: providerName}})
	return r.GetTarget(), err
}

// target reads a target; nil when it does not exist.
func (c *Client) target(ctx context.Context, id string) (*vagrant.Target, error) {
	ctx, err := c.ctx(ctx)
	if err != nil {
		return nil, err
	}
	r, err := c.api.GetTarget(ctx, &vagrant.GetTargetRequest{Target: &sdk.Ref_Target{ResourceId: id}})
	if status.Code(err) == codes.NotFound {
		return nil, nil
	}
	return r.GetTarget(), err
}

func (c *Client) deleteTarget(ctx context.Context, id string) error {
	ctx, err := c.ctx(ctx)
	if err != nil {
		return err
	}
	_, err = c.api.DeleteTarget(ctx, &vagrant.DeleteTargetRequest{Target: &sdk.Ref_Target{ResourceId: id}})
	return err
}

// queue queues command with args on target for the client's runner (targetRunner); a job no
// runner takes within expires ends in error.
func (c *Client) queue(ctx context.Context, target, command string, args []string, expires time.Duration) (string, error) {
	ctx, err := c.ctx(ctx)
	if err != nil {
		return "", err
	}
	ref := &sdk.Ref_Target{ResourceId: target}
	r, err := c.api.QueueJob(ctx, &vagrant.QueueJobRequest{ExpiresIn: expires.String(), Job: &vagrant.Job{
		Scope:        &vagrant.Job_Target{Target: ref},
		TargetRunner: c.targetRunner(),
		Labels:       map[string]string{"plinth.dev/by": "kaas"},
		Operation: &vagrant.Job_Command{Command: &vagrant.Job_CommandOp{Command: command,
			CliArgs: &sdk.Command_Arguments{Args: args}}},
	}})
	return r.GetJobId(), err
}
