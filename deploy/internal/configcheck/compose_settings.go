package configcheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
)

// CheckComposeSettings checks that every PLINTH_* variable a compose service built from a
// services/<S>/cmd/<B> binary (build args SERVICE and BINARY) sets is a setting of that binary:
// accepted is configcheck/settings.Binaries, read from the binaries' Config tags. A misspelt
// variable would otherwise be ignored and the binary run on its default.
func CheckComposeSettings(p *types.Project, accepted map[string]map[string]bool) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		s := p.Services[name]
		binary := binaryOf(s)
		if binary == "" {
			continue
		}
		set, ok := accepted[binary]
		if !ok {
			errs = append(errs, fmt.Errorf("service %s: binary %s has no known settings", name, binary))
			continue
		}
		for _, v := range slices.Sorted(maps.Keys(s.Environment)) {
			if strings.HasPrefix(v, "PLINTH_") && !set[v] {
				errs = append(errs, fmt.Errorf("service %s sets %s, which is not a setting of %s", name, v, binary))
			}
		}
	}
	return errs
}

// binaryOf is the binary a compose service is built from (build args SERVICE and BINARY,
// BINARY defaulting to SERVICE); "" for a service not built from services/.
func binaryOf(s types.ServiceConfig) string {
	if s.Build == nil || s.Build.Args["SERVICE"] == nil {
		return ""
	}
	if b := s.Build.Args["BINARY"]; b != nil {
		return *b
	}
	return *s.Build.Args["SERVICE"]
}
