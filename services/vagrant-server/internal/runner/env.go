package runner

import (
	"regexp"
	"slices"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// jobEnv is the environment of commands a job runs in machines: base, then the server's config
// variables that apply to this runner and the job's scope. A variable scoped more narrowly
// wins (runner or unscoped < basis < project < target); among equals the later one wins.
// Names that cannot be environment variables are skipped.
func jobEnv(base []string, vars []*vagrant.ConfigVar, runnerID string, job *vagrant.Job) []string {
	type candidate struct {
		rank     int
		name, kv string
	}
	var picked []candidate
	for _, v := range vars {
		rank := scopeRank(v, runnerID, job)
		if rank < 0 || !envNameRE.MatchString(v.GetName()) {
			continue
		}
		picked = append(picked, candidate{rank: rank, name: v.GetName(), kv: v.GetName() + "=" + v.GetValue()})
	}
	slices.SortStableFunc(picked, func(a, b candidate) int { return a.rank - b.rank })
	final := map[string]string{}
	var order []string
	for _, c := range picked {
		if _, seen := final[c.name]; !seen {
			order = append(order, c.name)
		}
		final[c.name] = c.kv
	}
	env := slices.Clone(base)
	for _, name := range order {
		env = append(env, final[name])
	}
	return env
}

// scopeRank is how narrowly v applies to the job on this runner, or -1 when it does not.
func scopeRank(v *vagrant.ConfigVar, runnerID string, job *vagrant.Job) int {
	target, project, basis := jobScope(job)
	switch s := v.GetScope().(type) {
	case nil:
		return 0
	case *vagrant.ConfigVar_Runner:
		if id := s.Runner.GetId(); id != nil && id.GetId() != runnerID {
			return -1
		}
		return 0
	case *vagrant.ConfigVar_Basis:
		return matchRank(1, sameBasis(s.Basis, basis))
	case *vagrant.ConfigVar_Project:
		return matchRank(2, sameProject(s.Project, project))
	case *vagrant.ConfigVar_Target:
		return matchRank(3, target != nil && sameRef(s.Target.GetResourceId(), s.Target.GetName(), target.GetResourceId(), target.GetName()) &&
			(s.Target.GetProject() == nil || sameProject(s.Target.GetProject(), project)))
	}
	return -1
}

func matchRank(rank int, ok bool) int {
	if ok {
		return rank
	}
	return -1
}

// jobScope returns the job's target, project and basis, filling the outer ones from the refs
// the inner ones carry.
func jobScope(job *vagrant.Job) (*sdk.Ref_Target, *sdk.Ref_Project, *sdk.Ref_Basis) {
	target := job.GetTarget()
	if target == nil {
		target = job.GetCommand().GetTarget()
	}
	project := job.GetProject()
	if project == nil {
		project = target.GetProject()
	}
	basis := job.GetBasis()
	if basis == nil {
		basis = project.GetBasis()
	}
	return target, project, basis
}

func sameBasis(a, b *sdk.Ref_Basis) bool {
	return b != nil && sameRef(a.GetResourceId(), a.GetName(), b.GetResourceId(), b.GetName())
}

func sameProject(a, b *sdk.Ref_Project) bool {
	return b != nil && sameRef(a.GetResourceId(), a.GetName(), b.GetResourceId(), b.GetName()) &&
		(a.GetBasis() == nil || b.GetBasis() == nil || sameBasis(a.GetBasis(), b.GetBasis()))
}

// sameRef compares by resource id when both have one, else by name.
func sameRef(idA, nameA, idB, nameB string) bool {
	if idA != "" && idB != "" {
		return idA == idB
	}
	return nameA != "" && nameA == nameB
}
