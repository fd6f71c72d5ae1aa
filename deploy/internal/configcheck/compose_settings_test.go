package configcheck

import (
	"errors"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"

	"github.com/plinth-dev/plinth/deploy/internal/configcheck/settings"
)

// Every PLINTH_* variable of a Plinth service in the compose file, the ceph profile's too, is a
// setting of the binary the service runs; a misspelt one and one given to the wrong binary fail.
func TestComposeSetsOnlySettings(t *testing.T) {
	accepted, err := settings.Binaries(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PLINTH_STATS_CEPH_URL": "https://mgr:8443"}
	p, err := loadCompose(t, nil, env, loader.WithProfiles([]string{"ceph"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Services["ceph"]; !ok {
		t.Fatal("the ceph profile has no ceph: the walk would miss it")
	}
	if err := errors.Join(CheckComposeSettings(p, accepted)...); err != nil {
		t.Fatal(err)
	}

	src := readRepoFile(t, composeFile)
	for _, tc := range []struct{ name, old, new, want string }{
		{"misspelt", "PLINTH_AUTH_GATEWAY_ADDR: 0.0.0.0:7011", "PLINTH_AUTH_GATEWAY_ADR: 0.0.0.0:7011",
			"service auth sets PLINTH_AUTH_GATEWAY_ADR, which is not a setting of auth"},
		{"another binary's", "PLINTH_AUTH_GATEWAY_ADDR: 0.0.0.0:7011", "PLINTH_KAAS_PROVIDER: vagrant",
			"service auth sets PLINTH_KAAS_PROVIDER, which is not a setting of auth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := loadCompose(t, mutate(t, src, tc.old, tc.new), env, loader.WithProfiles([]string{"ceph"}))
			if err != nil {
				t.Fatal(err)
			}
			wantErr(t, errors.Join(CheckComposeSettings(p, accepted)...), tc.want)
		})
	}
}
