package jobqueue

import (
	"sort"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// Operation names, as stored in jobs.operation and published in events.
const (
	OpNoop        = "noop"
	OpAuth        = "auth"
	OpDocs        = "docs"
	OpValidate    = "validate"
	OpCommand     = "command"
	OpInit        = "init"
	OpInitBasis   = "init_basis"
	OpInitProject = "init_project"
)

// operationName names the job's operation; "" when none that this build knows is set.
func operationName(job *vagrant.Job) string {
	switch job.GetOperation().(type) {
	case *vagrant.Job_Noop_:
		return OpNoop
	case *vagrant.Job_Auth:
		return OpAuth
	case *vagrant.Job_Docs:
		return OpDocs
	case *vagrant.Job_Validate:
		return OpValidate
	case *vagrant.Job_Command:
		return OpCommand
	case *vagrant.Job_Init:
		return OpInit
	case *vagrant.Job_InitBasis:
		return OpInitBasis
	case *vagrant.Job_InitProject:
		return OpInitProject
	}
	return ""
}

// Job field numbers 50–99 are the operation oneof (100 and up are server-set fields).
const (
	firstOperationField = 50
	lastOperationField  = 99
)

// unknownOperation returns the field number of an operation this build does not know, found
// among the job's unknown fields (a newer client's operation arrives that way), or 0.
func unknownOperation(job *vagrant.Job) protowire.Number {
	raw := job.ProtoReflect().GetUnknown()
	for len(raw) > 0 {
		num, _, n := protowire.ConsumeField(raw)
		if n < 0 {
			return 0
		}
		if num >= firstOperationField && num <= lastOperationField {
			return num
		}
		raw = raw[n:]
	}
	return 0
}

// Requirement is one component a runner must have for a job: a type, and a name unless any
// component of that type will do.
type Requirement struct {
	Type vagrant.Component_Type
	Name string
}

// token is the requirement as stored in jobs.required_components; a runner's
// component_tokens hold both forms for each component, so array containment (<@) matches.
func (r Requirement) token() string {
	if r.Name == "" {
		return r.Type.String()
	}
	return r.Type.String() + ":" + r.Name
}

// RequiredComponents returns the components a runner needs to run job; the package comment
// has the table. The runner binary uses it to check what it advertises.
func RequiredComponents(job *vagrant.Job) []Requirement {
	switch op := job.GetOperation().(type) {
	case *vagrant.Job_Auth:
		if c := op.Auth.GetComponent(); c != nil {
			return []Requirement{{Type: c.GetType(), Name: c.GetName()}}
		}
	case *vagrant.Job_Command:
		req := []Requirement{{Type: vagrant.Component_COMMAND}}
		if c := op.Command.GetComponent(); c != nil {
			req[0] = Requirement{Type: c.GetType(), Name: c.GetName()}
		}
		if op.Command.GetTarget() != nil || job.GetTarget() != nil {
			req = append(req, Requirement{Type: vagrant.Component_PROVIDER})
		}
		return req
	}
	return nil
}

// requiredTokens is RequiredComponents as sorted, unique tokens.
func requiredTokens(job *vagrant.Job) []string {
	return uniqueSorted(RequiredComponents(job), Requirement.token)
}

// componentTokens lists what a runner's components satisfy: each component's type alone and
// its type with its name.
func componentTokens(components []*vagrant.Component) []string {
	var req []Requirement
	for _, c := range components {
		req = append(req, Requirement{Type: c.GetType()})
		if c.GetName() != "" {
			req = append(req, Requirement{Type: c.GetType(), Name: c.GetName()})
		}
	}
	return uniqueSorted(req, Requirement.token)
}

func uniqueSorted[T any](items []T, key func(T) string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, it := range items {
		k := key(it)
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
