package configcheck

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/plinth-dev/plinth/libs/platform/config"
)

// CheckTiltSettings runs the Tiltfile as RunTiltfile does and checks its PLINTH_* variables
// against accepted, the binaries' settings (configcheck/settings.Binaries):
//   - each it reads with os.getenv is a setting of some binary or a variable of the launcher
//     (config.IsShared), so a misspelt name does not silently read nothing;
//   - each a resource's serve_env gives `plinth-up -run <binary>`, which passes it on, is a
//     setting of that binary or shared.
func CheckTiltSettings(root string, src []byte, env, local map[string]string, accepted map[string]map[string]bool) error {
	b, err := execTiltfile(root, src, env, local)
	if err != nil {
		return err
	}
	anyBinary := map[string]bool{}
	for _, set := range accepted {
		for n := range set {
			anyBinary[n] = true
		}
	}
	var errs []error
	for _, name := range slices.Compact(slices.Sorted(slices.Values(b.read))) {
		if strings.HasPrefix(name, config.EnvPrefix) && !anyBinary[name] && !config.IsShared(name) {
			errs = append(errs, fmt.Errorf("Tiltfile reads %s, which is neither a setting of a binary nor a variable of the launcher (config.IsShared)", name))
		}
	}
	for _, r := range b.resources {
		words := strings.Fields(r.ServeCmd)
		i := slices.Index(words, "-run")
		if i < 0 || i+1 >= len(words) {
			continue
		}
		binary := words[i+1]
		for _, name := range slices.Sorted(maps.Keys(r.ServeEnv)) {
			if strings.HasPrefix(name, config.EnvPrefix) && !accepted[binary][name] && !config.IsShared(name) {
				errs = append(errs, fmt.Errorf("resource %s gives %s %s, which is not one of its settings", r.Name, binary, name))
			}
		}
	}
	return errors.Join(errs...)
}
