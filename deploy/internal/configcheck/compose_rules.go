package configcheck

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/plinth-dev/plinth/deploy/internal/launcher"
)

// CheckStartOrder checks that a compose stack starts by health, not by luck: a service others
// wait for with service_completed_successfully is a one-shot; every other service has a health
// check; every depends_on waits for service_healthy (on a service with a health check) or for
// service_completed_successfully (on a one-shot that does not restart forever).
func CheckStartOrder(p *types.Project) []error {
	oneShot := map[string]bool{}
	for _, s := range p.Services {
		for dep, d := range s.DependsOn {
			if d.Condition == types.ServiceConditionCompletedSuccessfully {
				oneShot[dep] = true
			}
		}
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		s := p.Services[name]
		if !oneShot[name] && !hasHealthCheck(s) {
			errs = append(errs, fmt.Errorf("service %s has no health check: nothing can wait for it to be ready", name))
		}
		if oneShot[name] && (s.Restart == types.RestartPolicyAlways || s.Restart == types.RestartPolicyUnlessStopped) {
			errs = append(errs, fmt.Errorf("service %s is waited for to complete, but restarts %s", name, s.Restart))
		}
		for _, dep := range slices.Sorted(maps.Keys(s.DependsOn)) {
			d := s.DependsOn[dep]
			target, ok := p.Services[dep]
			if !ok {
				continue // reported by CheckCompose
			}
			switch d.Condition {
			case types.ServiceConditionHealthy:
				if !hasHealthCheck(target) {
					errs = append(errs, fmt.Errorf("service %s waits for %s to be healthy, but %s has no health check", name, dep, dep))
				}
			case types.ServiceConditionCompletedSuccessfully:
			default:
				errs = append(errs, fmt.Errorf("service %s depends on %s with condition %q: wait for service_healthy (or service_completed_successfully for a one-shot)", name, dep, d.Condition))
			}
		}
	}
	return errs
}

func hasHealthCheck(s types.ServiceConfig) bool {
	hc := s.HealthCheck
	return hc != nil && !hc.Disable && len(hc.Test) > 0 && hc.Test[0] != "NONE"
}

// secretName matches environment variables that hold a secret (or the name of a file with one).
var secretName = regexp.MustCompile(`(?i)(PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE_KEY|CREDENTIAL|_KEY$)`)

// interpolated is a value that is exactly one ${VAR...} reference.
var interpolated = regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*(:?[-?][^}]*)?\}$`)

// CheckNoLiteralSecrets reads the compose file without interpolation and refuses a secret
// written into it: a secret-named environment variable whose value is neither a ${VAR}
// reference nor an absolute path (a file holding it), and a URL with a literal password in
// any variable. Every service is checked, whatever its profile.
func CheckNoLiteralSecrets(ctx context.Context, path string, content []byte) error {
	p, err := LoadCompose(ctx, path, content, map[string]string{}, func(o *loader.Options) {
		o.SkipInterpolation = true
		o.Profiles = []string{"*"}
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		env := p.Services[name].Environment
		for _, k := range slices.Sorted(maps.Keys(env)) {
			v := env[k]
			if v == nil || *v == "" || interpolated.MatchString(*v) {
				continue
			}
			if secretName.MatchString(k) && !strings.HasPrefix(*v, "/") {
				errs = append(errs, fmt.Errorf("service %s: %s is written in the file: take it from the environment (${%s:?...}) or a generated file", name, k, k))
				continue
			}
			if u, err := url.Parse(*v); err == nil && u.User != nil {
				if pw, set := u.User.Password(); set && !interpolated.MatchString(pw) {
					errs = append(errs, fmt.Errorf("service %s: %s holds a URL with a password written in the file", name, k))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// CheckCommandsCovered checks that every command under services/*/cmd/ of the repository at
// root is built by a service of the compose file (build args SERVICE and BINARY), so a new
// server cannot land without a container.
func CheckCommandsCovered(p *types.Project, root string) error {
	built := map[string]bool{}
	for _, s := range slices.Concat(slices.Collect(maps.Values(p.Services)), slices.Collect(maps.Values(p.DisabledServices))) {
		if s.Build == nil || s.Build.Args["SERVICE"] == nil {
			continue
		}
		svc := *s.Build.Args["SERVICE"]
		bin := svc
		if b := s.Build.Args["BINARY"]; b != nil {
			bin = *b
		}
		built[svc+"/"+bin] = true
	}
	// The binaries `make up` would run, by Go's rules (launcher.Discover).
	bins, err := launcher.Discover(root)
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range bins {
		if !built[b.Service+"/"+b.Name] {
			errs = append(errs, fmt.Errorf("services/%s/cmd/%s has no compose service (build args SERVICE=%s BINARY=%s)", b.Service, b.Name, b.Service, b.Name))
		}
	}
	if len(bins) == 0 {
		errs = append(errs, fmt.Errorf("no commands under %s/services/*/cmd", root))
	}
	return errors.Join(errs...)
}
