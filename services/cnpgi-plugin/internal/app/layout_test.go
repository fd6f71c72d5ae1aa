package app

import (
	"errors"
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the plugin's module path.
const module = "github.com/plinth-dev/plinth/services/cnpgi-plugin"

// roles are the plugin's CNPG-I roles, each a tree under internal/: the sidecar beside
// PostgreSQL, the operator's side, and the recovery Job's restore. What two roles need lives
// below them (wal, backup, catalog, stores, cluster, errmap), never in another role.
var roles = []string{"internal/instance", "internal/operator", "internal/restore"}

// wiring registers every role on one server, so it alone may import them all.
var wiring = []string{"internal/app", "cmd/cnpgi-plugin"}

// pkgInfo is one package of the plugin: its name and the plugin packages (module-relative
// directories) its code imports, and its tests besides.
type pkgInfo struct {
	name              string
	imports, testOnly []string
}

// pluginPackages reads every package of the module from its sources (go/build, as `go list` does).
func pluginPackages(t *testing.T) map[string]pkgInfo {
	t.Helper()
	root := filepath.Join("..", "..")
	pkgs := map[string]pkgInfo{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" || (p != root && strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		bp, err := build.ImportDir(p, 0)
		if noGo := (*build.NoGoError)(nil); errors.As(err, &noGo) {
			return nil
		} else if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		own := func(lists ...[]string) []string {
			var out []string
			for _, l := range lists {
				for _, imp := range l {
					if r, ok := strings.CutPrefix(imp, module+"/"); ok && r != rel {
						out = append(out, r)
					}
				}
			}
			slices.Sort(out)
			return slices.Compact(out)
		}
		pkgs[rel] = pkgInfo{name: bp.Name, imports: own(bp.Imports), testOnly: own(bp.TestImports, bp.XTestImports)}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(slices.Clone(roles), "internal/wal", "internal/catalog") {
		if _, ok := pkgs[r]; !ok {
			t.Fatalf("no package %s among the %d read: the layout changed, or this test reads the wrong directory", r, len(pkgs))
		}
	}
	return pkgs
}

// roleOf is the role whose tree holds dir, or "".
func roleOf(dir string) string {
	for _, r := range roles {
		if dir == r || strings.HasPrefix(dir, r+"/") {
			return r
		}
	}
	return ""
}

// reach walks what from's code and tests import, and what that code imports in turn (a
// dependency's tests are not linked), and returns the first package bad accepts with the
// chain of imports that leads to it.
func reach(pkgs map[string]pkgInfo, from string, bad func(string) bool) []string {
	start := append(slices.Clone(pkgs[from].imports), pkgs[from].testOnly...)
	via := map[string]string{}
	queue := []string{}
	for _, s := range start {
		if _, seen := via[s]; !seen {
			via[s] = from
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if bad(p) {
			chain := []string{p}
			for q := via[p]; q != from; q = via[q] {
				chain = append([]string{q}, chain...)
			}
			return append([]string{from}, chain...)
		}
		for _, next := range pkgs[p].imports {
			if _, seen := via[next]; !seen {
				via[next] = p
				queue = append(queue, next)
			}
		}
	}
	return nil
}

// TestRolesDoNotImportEachOther keeps the roles apart: no package of one role's tree (code or
// tests) depends, directly or through shared packages, on a package of another role's.
func TestRolesDoNotImportEachOther(t *testing.T) {
	pkgs := pluginPackages(t)
	for dir := range pkgs {
		own := roleOf(dir)
		if own == "" {
			continue
		}
		if chain := reach(pkgs, dir, func(p string) bool { return roleOf(p) != "" && roleOf(p) != own }); chain != nil {
			t.Errorf("role %s depends on role %s: %s", own, roleOf(chain[len(chain)-1]), strings.Join(chain, " → "))
		}
	}
}

// TestSharedPackagesDoNotImportRoles keeps what the roles share below them: outside the
// wiring, a package that is in no role depends on none.
func TestSharedPackagesDoNotImportRoles(t *testing.T) {
	pkgs := pluginPackages(t)
	for dir := range pkgs {
		if roleOf(dir) != "" || slices.Contains(wiring, dir) {
			continue
		}
		if chain := reach(pkgs, dir, func(p string) bool { return roleOf(p) != "" }); chain != nil {
			t.Errorf("shared package %s depends on role %s: %s", dir, roleOf(chain[len(chain)-1]), strings.Join(chain, " → "))
		}
	}
}

// TestPackageNamesAreUnique: a package name says which package it is, anywhere in the plugin
// (commands, all named main, excepted).
func TestPackageNamesAreUnique(t *testing.T) {
	dirs := map[string][]string{}
	for dir, p := range pluginPackages(t) {
		if p.name != "main" {
			dirs[p.name] = append(dirs[p.name], dir)
		}
	}
	for name, ds := range dirs {
		if len(ds) > 1 {
			slices.Sort(ds)
			t.Errorf("package name %s is used by %s", name, strings.Join(ds, ", "))
		}
	}
}
