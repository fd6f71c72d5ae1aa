package launcher

import (
	"regexp"
	"testing"
)

// kaas's jobs target the id the runner reserves for them: both sides get the same id from
// the launcher, one per runtime home, and the runner accepts it.
func TestKaasJobsTargetTheRunnersReservedID(t *testing.T) {
	envOf := func(binary, home string) map[string]string {
		i := indexOf(Table(), binary)
		if i < 0 {
			t.Fatalf("%s is not in the table", binary)
		}
		placed := map[string]Placement{"auth": {GRPC: "127.0.0.1:7001"}, "vagrant-server": {GRPC: "127.0.0.1:7004"}, "kaas": {GRPC: "127.0.0.1:7003"}}
		return Table()[i].Env(Config{Home: home}, placed)
	}
	reserved := envOf("vagrant-runner", "/srv/a/.plinth")["PLINTH_VAGRANT_RUNNER_RESERVED_ID"]
	target := envOf("kaas", "/srv/a/.plinth")["PLINTH_KAAS_VAGRANT_RUNNER_ID"]
	if reserved == "" || reserved != target {
		t.Fatalf("runner reserves %q, kaas targets %q: want one id", reserved, target)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`).MatchString(reserved) {
		t.Errorf("reserved id %q is not a runner id vagrant-runner accepts", reserved)
	}
	if other := envOf("vagrant-runner", "/srv/b/.plinth")["PLINTH_VAGRANT_RUNNER_RESERVED_ID"]; other == reserved {
		t.Errorf("two runtime homes share the reserved id %q", reserved)
	}
}

// kaas's machines run the kube binaries from the directory kaas names: the runner shares that
// directory with its sandboxed machines, read-only at the same path.
func TestRunnerSharesKaasKubeBinaries(t *testing.T) {
	c := Config{Root: "/src/plinth"}
	runner, kaas := Table()[indexOf(Table(), "vagrant-runner")], Table()[indexOf(Table(), "kaas")]
	shared := runner.Env(c, nil)["PLINTH_VAGRANT_NETNS_SHARE"]
	if bin := kaas.Env(c, nil)["PLINTH_KAAS_VAGRANT_KUBE_BIN_DIR"]; bin == "" || shared != bin {
		t.Fatalf("the runner shares %q with its machines, kaas runs binaries from %q: want one path", shared, bin)
	}
}
