package configcheck

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// TiltResource is one local_resource a Tiltfile declares.
type TiltResource struct {
	Name         string
	Cmd          string
	ServeCmd     string
	ServeEnv     map[string]string
	Deps         []string
	ResourceDeps []string
	// Probe is the readiness probe's HTTP GET, nil without one.
	Probe *HTTPProbe
}

// HTTPProbe is an http_get_action.
type HTTPProbe struct {
	Host string
	Port int
	Path string
}

// RunTiltfile executes a Tiltfile (Starlark, with Tilt's dialect options) the way `tilt` would,
// with stand-ins for the Tilt functions it calls, and returns the resources it declares. The
// stand-ins take exactly Tilt's documented parameters, so a misspelt argument fails here as it
// would in Tilt; a Tilt function without a stand-in fails as undefined (add one in
// tilt_builtins.go). os.path.exists answers from root; os.getenv from env; local(command)
// from local, keyed by the command as one string (a command not in it fails the run).
func RunTiltfile(root string, src []byte, env, local map[string]string) ([]TiltResource, error) {
	b, err := execTiltfile(root, src, env, local)
	if err != nil {
		return nil, err
	}
	return b.resources, nil
}

// execTiltfile is RunTiltfile returning everything the stand-ins recorded.
func execTiltfile(root string, src []byte, env, local map[string]string) (*tiltBuiltins, error) {
	b := &tiltBuiltins{root: root, env: env, local: local}
	opts := &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}
	thread := &starlark.Thread{Name: "Tiltfile", Print: func(*starlark.Thread, string) {}}
	if _, err := starlark.ExecFileOptions(opts, thread, filepath.Join(root, "Tiltfile"), src, b.predeclared()); err != nil {
		var ee *starlark.EvalError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("Tiltfile: %s", ee.Backtrace())
		}
		return nil, fmt.Errorf("Tiltfile: %w", err)
	}
	return b, nil
}

// CheckTiltResources checks resources against the repository at root and the launcher's
// service table (ports shifted by offset, as PLINTH_PORT_OFFSET does): `go run` serves a main
// package that exists; every other path-like word of a command exists; deps exist;
// resource_deps name declared resources; an HTTP readiness probe asks 127.0.0.1 for /readyz on
// the admin address of what the resource serves (checkLauncherResources says which).
func CheckTiltResources(root string, offset int, rs []TiltResource) error {
	var errs []error
	names := map[string]bool{}
	for _, r := range rs {
		if names[r.Name] {
			errs = append(errs, fmt.Errorf("resource %s is declared twice", r.Name))
		}
		names[r.Name] = true
	}
	admins, err := checkLauncherResources(root, offset, rs)
	if err != nil {
		errs = append(errs, err)
	}
	for _, r := range rs {
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("resource %s: %s", r.Name, fmt.Sprintf(format, args...)))
		}
		for _, cmd := range []string{r.Cmd, r.ServeCmd} {
			if err := checkCommand(root, cmd); err != nil {
				fail("%v", err)
			}
		}
		for _, d := range r.Deps {
			if _, err := os.Stat(filepath.Join(root, d)); err != nil {
				fail("dep %s does not exist", d)
			}
		}
		for _, d := range r.ResourceDeps {
			if !names[d] {
				fail("resource_deps names %s, which is not declared", d)
			}
		}
		if r.Probe != nil {
			admin, ok := admins[r.Name]
			if !ok {
				admin = r.ServeEnv["PLINTH_ADMIN_ADDR"]
			}
			if want := fmt.Sprintf("127.0.0.1:%d", r.Probe.Port); admin != want || r.Probe.Host != "127.0.0.1" || r.Probe.Path != "/readyz" {
				fail("readiness probe asks http://%s:%d%s, but its admin server is at %q (want its /readyz)",
					r.Probe.Host, r.Probe.Port, r.Probe.Path, admin)
			}
		}
	}
	return errors.Join(errs...)
}

// checkCommand checks the paths a shell command names.
func checkCommand(root, cmd string) error {
	words := strings.Fields(cmd)
	if len(words) >= 3 && words[0] == "go" && words[1] == "run" {
		return mainPackage(filepath.Join(root, words[2]))
	}
	for _, w := range words {
		if strings.HasPrefix(w, "./") {
			if _, err := os.Stat(filepath.Join(root, w)); err != nil {
				return fmt.Errorf("command %q: %s does not exist", cmd, w)
			}
		}
	}
	return nil
}

// mainPackage checks that dir holds a Go main package.
func mainPackage(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("%s holds no Go files", dir)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		pf, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		if pf.Name.Name == "main" {
			return nil
		}
	}
	return fmt.Errorf("%s is not a main package", dir)
}
