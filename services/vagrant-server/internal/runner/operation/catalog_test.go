package operation_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider/netns"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner/operation"
)

func anyOf(m proto.Message) (*anypb.Any, error) { return anypb.New(m) }

func TestNoopInitDocs(t *testing.T) {
	e, _, _ := fixture(t)
	ctx := context.Background()
	out := &recorder{}
	res, err := e.Execute(ctx, &vagrant.Job{Operation: &vagrant.Job_Noop_{Noop: &vagrant.Job_Noop{}}}, nil, out)
	if err != nil || res == nil || len(out.lines()) != 1 {
		t.Errorf("noop: %v %v, output %q", res, err, out.lines())
	}

	res, err = e.Execute(ctx, &vagrant.Job{Operation: &vagrant.Job_Init{Init: &vagrant.Job_InitOp{}}}, nil, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range res.GetInit().GetCommands() {
		names[c.Name] = true
	}
	for _, want := range []string{"up", "halt", "destroy", "status", "reload", "ssh", "exec"} {
		if !names[want] {
			t.Errorf("init does not list command %s: %v", want, names)
		}
	}
	if n := len(res.GetInit().GetActions()); n != 10 { // 5 actions × 2 providers
		t.Errorf("init lists %d actions, want 10", n)
	}

	res, err = e.Execute(ctx, &vagrant.Job{Operation: &vagrant.Job_Docs{Docs: &vagrant.Job_DocsOp{}}}, nil, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(res.GetDocs().GetResults()), len(e.Components()); got != want {
		t.Errorf("docs for %d components, want %d", got, want)
	}
	for _, r := range res.GetDocs().GetResults() {
		if r.GetDocs().GetDescription() == "" {
			t.Errorf("component %v has no description", r.GetComponent())
		}
		if r.GetComponent().GetName() == "ssh" && (r.GetDocs().GetFields()["command"] == nil || r.GetDocs().GetExample() != "vagrant ssh -c COMMAND") {
			t.Errorf("ssh docs lack the command flag or the usage example: %v", r.GetDocs())
		}
	}
}

func TestDocsOfNetns(t *testing.T) {
	p, err := netns.New(netns.Options{})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := provider.NewSet(p)
	e, err := operation.New(operation.Options{Providers: set, DefaultProvider: netns.Name, Server: newRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Execute(context.Background(), &vagrant.Job{Operation: &vagrant.Job_Docs{Docs: &vagrant.Job_DocsOp{}}}, nil, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.GetDocs().GetResults() {
		if r.GetComponent().GetType() == vagrant.Component_PROVIDER {
			if f := r.GetDocs().GetFields()["subnet"]; f == nil || f.EnvVar != "PLINTH_VAGRANT_NETNS_SUBNET" || f.Default != "10.213.0.0/24" {
				t.Errorf("netns docs field subnet = %v", f)
			}
			return
		}
	}
	t.Error("docs have no PROVIDER result")
}

func TestAuthChecksComponents(t *testing.T) {
	e, _, fake := fixture(t)
	fake.CheckErr = errors.New("needs root")
	res, err := e.Execute(context.Background(), &vagrant.Job{Operation: &vagrant.Job_Auth{Auth: &vagrant.Job_AuthOp{CheckOnly: true}}}, nil, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(res.GetAuth().GetResults()), len(e.Components()); got != want {
		t.Fatalf("%d auth results, want one per component (%d)", got, want)
	}
	for _, r := range res.GetAuth().GetResults() {
		c := r.GetComponent()
		switch {
		case c.Type == vagrant.Component_PROVIDER && c.Name == "fake":
			if r.CheckResult || !r.AuthSupported || r.GetCheckError().GetMessage() != "needs root" {
				t.Errorf("fake provider: %v, want a failed check saying why", r)
			}
		case r.AuthCompleted || !r.CheckResult:
			t.Errorf("%v: %v, want a passing check and no auth attempt", c, r)
		}
	}

	only := &vagrant.Job_AuthOp{CheckOnly: true, Component: &vagrant.Ref_Component{Type: vagrant.Component_PROVIDER, Name: "other"}}
	res, err = e.Execute(context.Background(), &vagrant.Job{Operation: &vagrant.Job_Auth{Auth: only}}, nil, &recorder{})
	if err != nil || len(res.GetAuth().GetResults()) != 1 || !res.GetAuth().GetResults()[0].CheckResult {
		t.Errorf("auth of one component: %v %v", res, err)
	}
	only.Component.Name = "virtualbox"
	_, err = e.Execute(context.Background(), &vagrant.Job{Operation: &vagrant.Job_Auth{Auth: only}}, nil, &recorder{})
	if status.Code(err) != codes.NotFound {
		t.Errorf("auth of a missing component: %v, want NotFound", err)
	}
}

func TestValidateAndInitScopes(t *testing.T) {
	e, reg, _ := fixture(t)
	ctx := context.Background()
	validate := func(scope any) error {
		job := &vagrant.Job{Operation: &vagrant.Job_Validate{Validate: &vagrant.Job_ValidateOp{}}}
		switch s := scope.(type) {
		case *sdk.Ref_Target:
			job.Scope = &vagrant.Job_Target{Target: s}
		case *sdk.Ref_Project:
			job.Scope = &vagrant.Job_Project{Project: s}
		}
		res, err := e.Execute(ctx, job, nil, &recorder{})
		if err == nil && res.GetValidate() == nil {
			t.Errorf("validate of %v: no ValidateResult", scope)
		}
		return err
	}
	if err := validate(&sdk.Ref_Target{ResourceId: "T1"}); err != nil {
		t.Errorf("validate a registered target: %v", err)
	}
	if err := validate(&sdk.Ref_Target{Name: "ghost"}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("validate a missing target: %v, want FailedPrecondition", err)
	}
	if err := validate(&sdk.Ref_Project{Name: "ghost"}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("validate a missing project: %v, want FailedPrecondition", err)
	}

	basisJob := &vagrant.Job{Scope: &vagrant.Job_Basis{Basis: &sdk.Ref_Basis{Name: "home", Path: "/home/me"}},
		Operation: &vagrant.Job_InitBasis{InitBasis: &vagrant.Job_InitBasisOp{}}}
	for range 2 { // registers, then finds
		res, err := e.Execute(ctx, basisJob, nil, &recorder{})
		if err != nil || res.GetBasis().GetBasis().GetResourceId() != "B-home" || res.GetBasis().GetBasis().GetPath() != "/home/me" {
			t.Fatalf("init_basis: %v %v", res, err)
		}
	}
	if len(reg.bases) != 1 {
		t.Errorf("init_basis registered %d bases, want 1", len(reg.bases))
	}
	projectJob := &vagrant.Job{Scope: &vagrant.Job_Project{Project: &sdk.Ref_Project{Name: "site", Basis: &sdk.Ref_Basis{ResourceId: "B-home"}}},
		Operation: &vagrant.Job_InitProject{InitProject: &vagrant.Job_InitProjectOp{}}}
	res, err := e.Execute(ctx, projectJob, nil, &recorder{})
	if err != nil || res.GetProject().GetProject().GetResourceId() != "P-site" || res.GetProject().GetProject().GetBasis().GetResourceId() != "B-home" {
		t.Errorf("init_project: %v %v", res, err)
	}
}

// Two runs of an init job race (a job can run twice: at-least-once): the one that finds the
// basis or project registered meanwhile uses it instead of failing.
func TestInitIsIdempotentWhenTwoRunsRace(t *testing.T) {
	e, reg, _ := fixture(t)
	ctx := context.Background()
	reg.beforeCreate = func(r *registry) {
		r.bases["home"] = &vagrant.Basis{ResourceId: "B-other-run", Name: "home", Path: "/home/me"}
		r.projects["site"] = &vagrant.Project{ResourceId: "P-other-run", Name: "site", Basis: &sdk.Ref_Basis{ResourceId: "B-other-run"}}
	}
	basis, err := e.Execute(ctx, &vagrant.Job{Scope: &vagrant.Job_Basis{Basis: &sdk.Ref_Basis{Name: "home", Path: "/home/me"}},
		Operation: &vagrant.Job_InitBasis{InitBasis: &vagrant.Job_InitBasisOp{}}}, nil, &recorder{})
	if err != nil || basis.GetBasis().GetBasis().GetResourceId() != "B-other-run" {
		t.Fatalf("init_basis racing another run: %v, %v; want the basis the other run registered", basis, err)
	}
	project, err := e.Execute(ctx, &vagrant.Job{Scope: &vagrant.Job_Project{Project: &sdk.Ref_Project{Name: "site", Basis: &sdk.Ref_Basis{ResourceId: "B-other-run"}}},
		Operation: &vagrant.Job_InitProject{InitProject: &vagrant.Job_InitProjectOp{}}}, nil, &recorder{})
	if err != nil || project.GetProject().GetProject().GetResourceId() != "P-other-run" {
		t.Fatalf("init_project racing another run: %v, %v; want the project the other run registered", project, err)
	}
}
