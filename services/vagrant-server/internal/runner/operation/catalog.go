package operation

import (
	"context"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
)

// providerActions are the actions every provider implements (Init lists them per provider).
func providerActions() []string { return []string{"up", "halt", "destroy", "status", "exec"} }

// init describes what this runner can do: its commands and its providers' actions.
func (e *Executor) init(out Output) *vagrant.Job_Result {
	res := &vagrant.Job_InitResult{}
	for _, c := range commands() {
		res.Commands = append(res.Commands, c.info)
	}
	for _, name := range e.providers.Names() {
		for _, a := range providerActions() {
			res.Actions = append(res.Actions, &vagrant.Job_Action{Name: a, Source: name})
		}
	}
	say(out, "%d commands, providers %v", len(res.Commands), e.providers.Names())
	return &vagrant.Job_Result{Init: res}
}

// docs documents every component the runner registers.
func (e *Executor) docs(out Output) *vagrant.Job_Result {
	res := &vagrant.Job_DocsResult{}
	for _, c := range commands() {
		// Help is "Usage: <example>\n\n<description>".
		usage, text, _ := strings.Cut(c.info.Help, "\n\n")
		d := &vagrant.Documentation{Description: c.info.Synopsis + ". " + text, Example: strings.TrimPrefix(usage, "Usage: "),
			Fields: map[string]*vagrant.Documentation_Field{}}
		for _, f := range c.info.Flags {
			d.Fields[f.LongName] = &vagrant.Documentation_Field{Name: f.LongName, Synopsis: f.Description,
				Type: f.Type.String(), Optional: true, Default: f.DefaultValue}
		}
		res.Results = append(res.Results, &vagrant.Job_DocsResult_Result{
			Component: &vagrant.Component{Type: vagrant.Component_COMMAND, Name: c.info.Name}, Docs: d})
	}
	for _, name := range e.providers.Names() {
		p, _ := e.providers.Get(name)
		d := &vagrant.Documentation{Description: "machine provider " + name, Fields: map[string]*vagrant.Documentation_Field{}}
		if doc, ok := p.(provider.Documented); ok {
			pd := doc.Docs()
			d.Description, d.Example = pd.Description, pd.Example
			for _, f := range pd.Fields {
				d.Fields[f.Name] = &vagrant.Documentation_Field{Name: f.Name, Synopsis: f.Synopsis, Summary: f.Summary,
					EnvVar: f.EnvVar, Type: f.Type, Default: f.Default, Optional: true}
			}
		}
		res.Results = append(res.Results, &vagrant.Job_DocsResult_Result{
			Component: &vagrant.Component{Type: vagrant.Component_PROVIDER, Name: name}, Docs: d})
	}
	say(out, "documented %d components", len(res.Results))
	return &vagrant.Job_Result{Docs: res}
}

// auth checks the runner's components, or only the one op.component names. Providers that
// implement provider.Checker check their prerequisites on this host; other components have
// nothing to authenticate and pass, as the AuthResult contract says. Nothing is ever
// authenticated (the components hold no credentials), so auth_completed stays false, also
// when check_only is false.
func (e *Executor) auth(ctx context.Context, op *vagrant.Job_AuthOp, out Output) (*vagrant.Job_Result, error) {
	want := op.GetComponent()
	res := &vagrant.Job_AuthResult{}
	for _, c := range e.Components() {
		if want != nil && (want.GetType() != c.Type || (want.GetName() != "" && want.GetName() != c.Name)) {
			continue
		}
		r := &vagrant.Job_AuthResult_Result{Component: c, CheckResult: true}
		if p, ok := e.providers.Get(c.Name); ok && c.Type == vagrant.Component_PROVIDER {
			if checker, ok := p.(provider.Checker); ok {
				r.AuthSupported = true
				if err := checker.Check(ctx); err != nil {
					r.CheckResult = false
					r.CheckError = status.New(codes.FailedPrecondition, err.Error()).Proto()
				}
			}
		}
		say(out, "%s %s: check %s", c.Type, c.Name, map[bool]string{true: "passed", false: "failed: " + r.CheckError.GetMessage()}[r.CheckResult])
		res.Results = append(res.Results, r)
	}
	if want != nil && len(res.Results) == 0 {
		return nil, status.Errorf(codes.NotFound, "this runner has no %s component %q", want.GetType(), want.GetName())
	}
	return &vagrant.Job_Result{Auth: res}, nil
}
