package kubetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// crdModulesDir is the pinned module, relative to the repository root, whose go.mod says
// which version of each upstream module the CRDs come from.
const crdModulesDir = "tools/crds"

// CRDsFromModule returns the CustomResourceDefinitions in the files matching globs (paths
// inside the module, filepath.Match syntax, e.g. "config/crd/bases/*.yaml") of module at the
// version tools/crds/go.mod pins. The module is fetched into the Go module cache through the
// module proxy, verified against tools/crds/go.sum; when it cannot be fetched the test is
// skipped, or fails under PLINTH_TEST_STRICT=1.
func CRDsFromModule(t testing.TB, module string, globs ...string) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return crdsFromModuleIn(t, crdModulesDir, module, globs)
}

// crdsFromModuleIn is CRDsFromModule at the version modulesDir's go.mod pins: another tools
// module, for a second version of a module tools/crds already pins at one.
func crdsFromModuleIn(t testing.TB, modulesDir, module string, globs []string) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	dir, err := moduleDirIn(modulesDir, module)
	if err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	crds, err := crdsInDir(dir, globs)
	if err != nil {
		t.Fatalf("kubetest: %s: %v", module, err)
	}
	return crds
}

// ModuleCRDs is CRDsFromModule outside a test (make kube-up installs cert-manager's CRDs).
func ModuleCRDs(module string, globs ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	dir, err := ModuleDir(module)
	if err != nil {
		return nil, err
	}
	crds, err := crdsInDir(dir, globs)
	if err != nil {
		return nil, fmt.Errorf("kubetest: %s: %w", module, err)
	}
	return crds, nil
}

// crdsInDir parses every file under dir matching one of globs; a glob that matches nothing
// is an error, since upstream moved its files and the test would silently install less.
func crdsInDir(dir string, globs []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	if len(globs) == 0 {
		return nil, fmt.Errorf("no file patterns given")
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, glob := range globs {
		files, err := filepath.Glob(filepath.Join(dir, glob))
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", glob, err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no file matches %q", glob)
		}
		sort.Strings(files)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				return nil, err
			}
			found, err := ParseCRDs(data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", strings.TrimPrefix(file, dir+"/"), err)
			}
			crds = append(crds, found...)
		}
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition in %v", globs)
	}
	return crds, nil
}

// ModuleDir runs `go mod download -json module` in tools/crds and returns where the module's
// files are (for CRDs, and for an upstream manifest kubelocal applies as its project ships
// it). GOWORK=off keeps the workspace out; -mod=readonly keeps the test from editing go.sum,
// which must already vouch for the module.
func ModuleDir(module string) (string, error) { return moduleDirIn(crdModulesDir, module) }

// moduleDirIn is ModuleDir in modulesDir (relative to the repository root) instead of tools/crds.
func moduleDirIn(modulesDir, module string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module)
	cmd.Dir = filepath.Join(root, modulesDir)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var info struct {
		Dir   string
		Error string
	}
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil || runErr != nil || info.Error != "" || info.Dir == "" {
		why := strings.TrimSpace(info.Error + " " + stderr.String())
		if runErr != nil {
			why = strings.TrimSpace(runErr.Error() + ": " + why)
		}
		return "", fmt.Errorf("kubetest: go mod download %s in %s (is it required in its go.mod?): %s",
			module, modulesDir, why)
	}
	return info.Dir, nil
}
