package runner

import (
	"slices"
	"testing"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

func TestJobEnvScopes(t *testing.T) {
	job := &vagrant.Job{Scope: &vagrant.Job_Target{Target: &sdk.Ref_Target{ResourceId: "T1", Name: "web",
		Project: &sdk.Ref_Project{ResourceId: "P1", Name: "site", Basis: &sdk.Ref_Basis{ResourceId: "B1", Name: "home"}}}}}
	runnerScope := func(id string) *vagrant.ConfigVar_Runner {
		if id == "" {
			return &vagrant.ConfigVar_Runner{Runner: &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Any{Any: &vagrant.Ref_RunnerAny{}}}}
		}
		return &vagrant.ConfigVar_Runner{Runner: &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Id{Id: &vagrant.Ref_RunnerId{Id: id}}}}
	}
	vars := []*vagrant.ConfigVar{
		{Name: "LEVEL", Value: "target", Scope: &vagrant.ConfigVar_Target{Target: &sdk.Ref_Target{Name: "web"}}},
		{Name: "LEVEL", Value: "project", Scope: &vagrant.ConfigVar_Project{Project: &sdk.Ref_Project{ResourceId: "P1"}}},
		{Name: "LEVEL", Value: "global"},
		{Name: "ANY", Value: "1", Scope: runnerScope("")},
		{Name: "MINE", Value: "1", Scope: runnerScope("r1")},
		{Name: "THEIRS", Value: "1", Scope: runnerScope("r2")},
		{Name: "BASIS", Value: "1", Scope: &vagrant.ConfigVar_Basis{Basis: &sdk.Ref_Basis{Name: "home"}}},
		{Name: "OTHER_PROJECT", Value: "1", Scope: &vagrant.ConfigVar_Project{Project: &sdk.Ref_Project{ResourceId: "P2"}}},
		{Name: "bad name", Value: "1"},
		{Name: "MINE", Value: "2", Scope: runnerScope("r1")}, // later wins among equals
	}
	got := jobEnv([]string{"HOME=/root"}, vars, "r1", job)
	want := []string{"HOME=/root", "LEVEL=target", "ANY=1", "MINE=2", "BASIS=1"}
	slices.Sort(got[1:])
	slices.Sort(want[1:])
	if !slices.Equal(got, want) {
		t.Errorf("env %v, want %v", got, want)
	}
}
