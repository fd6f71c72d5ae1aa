package all_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// modulePath is the import path of libs/api.
const modulePath = "github.com/plinth-dev/plinth/libs/api"

// TestEveryGeneratedPackageIsLinked keeps all.go complete: a generated package it does not
// import would silently escape the conformance check and the access declarations' check.
func TestEveryGeneratedPackageIsLinked(t *testing.T) {
	var generated []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && (d.Name() == "conformance" || d.Name() == "testdata" || d.Name() == "all" || d.Name() == "access") {
			return fs.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".pb.go") {
			rel, err := filepath.Rel("..", filepath.Dir(path))
			if err != nil {
				return err
			}
			generated = append(generated, modulePath+"/"+filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk libs/api: %v", err)
	}
	slices.Sort(generated)
	generated = slices.Compact(generated)

	file, err := parser.ParseFile(token.NewFileSet(), "all.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, imp := range file.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		linked[path] = true
	}
	if len(generated) == 0 {
		t.Fatal("found no generated packages under libs/api: has buf generate run?")
	}
	for _, pkg := range generated {
		if !linked[pkg] {
			t.Errorf("generated package %s is not imported by libs/api/all (all.go): add it so its API is checked", pkg)
		}
	}
}
