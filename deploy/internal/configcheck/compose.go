package configcheck

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// LoadCompose loads a Compose file as `docker compose` does: Compose Spec schema validation,
// interpolation from env, relative paths resolved against the file's directory, and the
// loader's consistency checks (depends_on, networks, volumes that must be declared).
// content replaces the file's bytes when not nil (to check a changed copy); opts are the
// loader's (loader.WithProfiles to enable profiles).
func LoadCompose(ctx context.Context, path string, content []byte, env map[string]string, opts ...func(*loader.Options)) (*types.Project, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if content == nil {
		if content, err = os.ReadFile(abs); err != nil {
			return nil, err
		}
	}
	details := types.ConfigDetails{
		WorkingDir:  filepath.Dir(abs),
		ConfigFiles: []types.ConfigFile{{Filename: abs, Content: content}},
		Environment: env,
	}
	p, err := loader.LoadWithContext(ctx, details, opts...)
	if err != nil {
		return nil, fmt.Errorf("compose file %s: %w", path, err)
	}
	return p, nil
}

// CheckCompose checks what the Compose loader cannot know about this repository:
//   - every depends_on names a service of the file;
//   - every build context and Dockerfile exists, the Dockerfile parses (ParseDockerfile) and
//     declares every build arg given, and SERVICE/BINARY args name a services/<S>/cmd/<B>;
//   - every bind-mounted file or directory exists, but for build outputs under bin/;
//   - Plinth services (those with PLINTH_GRPC_ADDR) are configured as the runtime conventions
//     say (CheckPlinthService);
//   - the gateway (the envoyproxy/envoy image) gets its config from a bind mount, and auth
//     believes x-forwarded-for only on its mutual-TLS gateway listener, which every Go
//     gateway dials, never from an address (CheckGatewayTrust);
//   - Postgres trusts no one and services connect as a role that is not the superuser, with a
//     password file from a read-only volume (CheckComposePostgres);
//   - start order is by health: every service that runs (not a one-shot that others wait to
//     complete) has a health check, and every depends_on waits for service_healthy or, for a
//     one-shot, service_completed_successfully (CheckStartOrder);
//   - an image stage that runs as root (a Dockerfile --target) is used only by a service that
//     is granted the privileges it needs root for (privileged or cap_add).
func CheckCompose(p *types.Project) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		s := p.Services[name]
		for dep, d := range s.DependsOn {
			// required: false names a service of a profile that may be off (compose skips it).
			if _, ok := p.Services[dep]; !ok && d.Required {
				errs = append(errs, fmt.Errorf("service %s depends on %s, which is not a service of this file", name, dep))
			}
		}
		errs = append(errs, checkBuild(s)...)
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeBind && !buildOutput(p, v.Source) {
				if _, err := os.Stat(v.Source); err != nil {
					errs = append(errs, fmt.Errorf("service %s mounts %s, which does not exist", name, v.Source))
				}
			}
		}
		if _, ok := s.Environment["PLINTH_GRPC_ADDR"]; ok {
			errs = append(errs, CheckPlinthService(p, s)...)
		}
		if isEnvoy(s) {
			errs = append(errs, checkEnvoyMount(s)...)
		}
	}
	errs = append(errs, CheckGatewayTrust(p)...)
	errs = append(errs, CheckComposePostgres(p)...)
	errs = append(errs, CheckStartOrder(p)...)
	return errors.Join(errs...)
}

func checkBuild(s types.ServiceConfig) []error {
	if s.Build == nil {
		return nil
	}
	ctxDir := s.Build.Context
	if st, err := os.Stat(ctxDir); err != nil || !st.IsDir() {
		return []error{fmt.Errorf("service %s: build context %s is not a directory", s.Name, ctxDir)}
	}
	df := s.Build.Dockerfile
	if df == "" {
		df = "Dockerfile"
	}
	if !filepath.IsAbs(df) {
		df = filepath.Join(ctxDir, df)
	}
	src, err := os.ReadFile(df)
	if err != nil {
		return []error{fmt.Errorf("service %s: dockerfile: %w", s.Name, err)}
	}
	d, err := ParseDockerfile(src)
	if err != nil {
		return []error{fmt.Errorf("service %s: %s: %w", s.Name, df, err)}
	}
	var errs []error
	if t := s.Build.Target; t != "" {
		root, ok := d.Targets[t]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("service %s: build target %s is not an image stage of %s", s.Name, t, df))
		case root && !s.Privileged && len(s.CapAdd) == 0:
			errs = append(errs, fmt.Errorf("service %s: target %s runs as root, but the service is granted no privileges (privileged, cap_add) that would need it", s.Name, t))
		}
	}
	for _, arg := range slices.Sorted(maps.Keys(s.Build.Args)) {
		if !d.Args[arg] {
			errs = append(errs, fmt.Errorf("service %s: build arg %s is not declared (ARG) in %s", s.Name, arg, df))
		}
	}
	if svc := s.Build.Args["SERVICE"]; svc != nil {
		bin := svc
		if b := s.Build.Args["BINARY"]; b != nil {
			bin = b
		}
		dir := filepath.Join(ctxDir, "services", *svc, "cmd", *bin)
		if err := mainPackage(dir); err != nil {
			errs = append(errs, fmt.Errorf("service %s: build args SERVICE=%s BINARY=%s: %w", s.Name, *svc, *bin, err))
		}
	}
	return errs
}

func isEnvoy(s types.ServiceConfig) bool {
	return strings.HasPrefix(s.Image, "envoyproxy/envoy:")
}

// checkEnvoyMount checks that Envoy's -c file is bind-mounted from deploy/envoy/envoy.yaml.
func checkEnvoyMount(s types.ServiceConfig) []error {
	i := slices.Index(s.Command, "-c")
	if i < 0 || i+1 >= len(s.Command) {
		return []error{fmt.Errorf("service %s: command %q does not name a config file with -c", s.Name, s.Command)}
	}
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == s.Command[i+1] {
			if !strings.HasSuffix(filepath.ToSlash(v.Source), "/deploy/envoy/envoy.yaml") {
				return []error{fmt.Errorf("service %s: %s comes from %s, not deploy/envoy/envoy.yaml", s.Name, v.Target, v.Source)}
			}
			return nil
		}
	}
	return []error{fmt.Errorf("service %s: nothing is mounted at %s (-c)", s.Name, s.Command[i+1])}
}

// buildOutput says whether a bind mount's source is under the project's bin/, where the make
// targets put what they build (make tools-k8s's Kubernetes binaries): it need not exist when
// the file is checked, Docker makes a missing one, and the service using it says what to run.
func buildOutput(p *types.Project, source string) bool {
	rel, err := filepath.Rel(filepath.Join(p.WorkingDir, "bin"), source)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
