package configcheck

import (
	"testing"

	"github.com/plinth-dev/plinth/deploy/internal/configcheck/settings"
)

// The Tiltfile reads only the launcher's variables and the binaries' settings, and what a
// resource's serve_env gives a binary through the launcher is one of its settings.
func TestTiltfileUsesOnlySettings(t *testing.T) {
	accepted, err := settings.Binaries(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	src := readRepoFile(t, "Tiltfile")
	for _, machine := range []map[string]string{rootWithLVM, notRoot} {
		if err := CheckTiltSettings(repoRoot(t), src, map[string]string{}, machine, accepted); err != nil {
			t.Fatal(err)
		}
	}
	logLevel := mutate(t, src, "serve_cmd=[LAUNCHER, '-run', binary],", "serve_cmd=[LAUNCHER, '-run', binary], serve_env={'PLINTH_LOG_LEVEL': 'debug'},")
	if err := CheckTiltSettings(repoRoot(t), logLevel, map[string]string{}, rootWithLVM, accepted); err != nil {
		t.Fatalf("every binary has PLINTH_LOG_LEVEL: %v", err)
	}

	for _, tc := range []struct{ name, old, new, want string }{
		{"misspelt getenv", "os.getenv('PLINTH_PORT_OFFSET', '0')", "os.getenv('PLINTH_PORT_OFSET', '0')",
			"Tiltfile reads PLINTH_PORT_OFSET"},
		{"another binary's setting", "serve_cmd=[LAUNCHER, '-run', binary],",
			"serve_cmd=[LAUNCHER, '-run', binary], serve_env={'PLINTH_KAAS_PROVIDER': 'maas'},",
			"resource auth gives auth PLINTH_KAAS_PROVIDER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, CheckTiltSettings(repoRoot(t), mutate(t, src, tc.old, tc.new), map[string]string{}, rootWithLVM, accepted), tc.want)
		})
	}
}
