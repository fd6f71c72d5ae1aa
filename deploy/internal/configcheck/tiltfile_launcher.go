package configcheck

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/plinth-dev/plinth/deploy/internal/launcher"
)

// checkLauncherResources checks the Tiltfile against the launcher it drives: one resource
// serves `plinth-up -infra-only`; every binary the launcher finds under services/*/cmd has one
// resource that builds it (`./services/<svc>/cmd/<binary>` in its cmd) and serves
// `plinth-up -run <binary>` (an Optional binary may have none), waits for the infra resource
// and for the binary's DependsOn that have resources, and
// probes that binary's admin address. It returns the admin address each of those resources
// serves, keyed by resource name.
func checkLauncherResources(root string, offset int, rs []TiltResource) (map[string]string, error) {
	found, err := launcher.Discover(root)
	if err != nil {
		return nil, err
	}
	placed, _, err := launcher.Plan(found, "/home", offset, func(int) bool { return true })
	if err != nil {
		return nil, err
	}
	byBinary := map[string]launcher.Placement{}
	for _, p := range placed {
		byBinary[p.Spec.Binary] = p
	}
	var errs []error
	admins := map[string]string{}
	infra := ""
	served := map[string]string{} // binary → resource
	for _, r := range rs {
		words := strings.Fields(r.ServeCmd)
		if len(words) == 0 || !strings.HasSuffix(words[0], "plinth-up") {
			continue
		}
		switch {
		case slices.Contains(words, "-infra-only"):
			if infra != "" {
				errs = append(errs, fmt.Errorf("resources %s and %s both serve plinth-up -infra-only", infra, r.Name))
			}
			infra = r.Name
			admins[r.Name] = fmt.Sprintf("127.0.0.1:%d", launcher.InfraAdminPort+offset)
		case slices.Contains(words, "-run"):
			i := slices.Index(words, "-run")
			if i+1 >= len(words) {
				errs = append(errs, fmt.Errorf("resource %s: -run without a binary", r.Name))
				continue
			}
			binary := words[i+1]
			p, ok := byBinary[binary]
			if !ok {
				errs = append(errs, fmt.Errorf("resource %s runs %s, which is not under services/*/cmd", r.Name, binary))
				continue
			}
			if other, dup := served[binary]; dup {
				errs = append(errs, fmt.Errorf("resources %s and %s both run %s", other, r.Name, binary))
			}
			served[binary] = r.Name
			admins[r.Name] = p.Admin
		}
	}
	if infra == "" {
		errs = append(errs, errors.New("no resource serves plinth-up -infra-only: nothing starts NATS and Postgres for the services"))
	}
	for _, p := range placed {
		name, ok := served[p.Spec.Binary]
		if !ok && p.Spec.Optional != "" {
			continue // left out where it cannot run, as the launcher skips it
		}
		if !ok {
			errs = append(errs, fmt.Errorf("%s (services/%s) has no resource running plinth-up -run %s: add a plinth_service line",
				p.Spec.Binary, p.Spec.Service, p.Spec.Binary))
			continue
		}
		r := rs[slices.IndexFunc(rs, func(r TiltResource) bool { return r.Name == name })]
		pkg := launcher.Binary{Service: p.Spec.Service, Name: p.Spec.Binary}.Package()
		if !slices.Contains(strings.Fields(r.Cmd), pkg) {
			errs = append(errs, fmt.Errorf("resource %s: its cmd %q does not build %s, so a change would restart the old binary", name, r.Cmd, pkg))
		}
		if r.Probe == nil {
			errs = append(errs, fmt.Errorf("resource %s has no readiness probe: resources depending on it would start too early", name))
		}
		want := []string{infra}
		for _, d := range p.Spec.DependsOn {
			if dep, present := served[d]; present {
				want = append(want, dep)
			}
		}
		for _, w := range want {
			if w != "" && !slices.Contains(r.ResourceDeps, w) {
				errs = append(errs, fmt.Errorf("resource %s: resource_deps %v lack %s, which the launcher starts it after", name, r.ResourceDeps, w))
			}
		}
	}
	return admins, errors.Join(errs...)
}
