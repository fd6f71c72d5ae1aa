// Package settings lists the environment variables each Plinth binary accepts, read from
// where the binary declares them: the env tags of the Config structs that libs/platform/config
// fills. The launcher's tests and the compose, Tilt and Kubernetes checks all ask it, so a
// setting misspelt anywhere fails a test instead of leaving the binary on its default.
package settings

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// modulePrefix is the import path of this repository's packages; tags are read only in them.
const modulePrefix = "github.com/plinth-dev/plinth/"

// Binaries maps each binary under root/services/*/cmd to the set of environment variables it
// accepts: every env tag of a struct field in the binary's main package or in a package of this
// repository it links. A tag that is declared is one config.Load reads when its struct is part of
// a Config; a binary links the Config of each of its commands (cnpgi-plugin's admin
// subcommands too), so the set is what some invocation of the binary reads.
//
// It runs `go list -e` in root (the workspace), so it needs the Go toolchain and a checkout; a
// package that does not compile is still read, so its compiler's error is the one reported.
func Binaries(root string) (map[string]map[string]bool, error) {
	mains, err := filepath.Glob(filepath.Join(root, "services", "*", "cmd", "*"))
	if err != nil {
		return nil, err
	}
	if len(mains) == 0 {
		return nil, fmt.Errorf("no services/*/cmd/* under %s", root)
	}
	args := []string{"list", "-e", "-deps", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \",\"}}\t{{join .Deps \",\"}}\t{{.Name}}"}
	for _, m := range mains {
		rel, err := filepath.Rel(root, m)
		if err != nil {
			return nil, err
		}
		args = append(args, "./"+filepath.ToSlash(rel))
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list the binaries' packages: %w: %s", err, stderr.String())
	}

	type pkg struct {
		dir   string
		files []string
		deps  []string
	}
	pkgs := map[string]pkg{}
	var binaries []string // import paths of the main packages asked for
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimRight(line, "\n"), "\t")
		if len(f) != 5 || !strings.HasPrefix(f[0], modulePrefix) {
			continue
		}
		pkgs[f[0]] = pkg{dir: f[1], files: splitComma(f[2]), deps: splitComma(f[3])}
		if f[4] == "main" && strings.Contains(f[0], "/cmd/") {
			binaries = append(binaries, f[0])
		}
	}

	types := map[typeRef]structInfo{}  // named struct types of every package, by package and name
	roots := map[string][]structInfo{} // every struct (named or not) of each package
	for path, p := range pkgs {
		for _, name := range p.files {
			if err := readStructs(filepath.Join(p.dir, name), path, types, roots); err != nil {
				return nil, err
			}
		}
	}
	result := map[string]map[string]bool{}
	for _, b := range binaries {
		// The binary's own service declares its Config; a library's struct counts only when
		// one of those reaches it (config.Common, and through it config.Database), so linking
		// libs/platform/config does not make every shared part a setting.
		service := b[:strings.Index(b, "/cmd/")+1]
		set := map[string]bool{}
		seen := map[typeRef]bool{}
		var visit func(s structInfo)
		visit = func(s structInfo) {
			for _, t := range s.tags {
				set[t] = true
			}
			for _, r := range s.refs {
				if t, ok := types[r]; ok && !seen[r] {
					seen[r] = true
					visit(t)
				}
			}
		}
		for _, path := range append([]string{b}, pkgs[b].deps...) {
			if strings.HasPrefix(path, service) {
				for _, s := range roots[path] {
					visit(s)
				}
			}
		}
		result[b[strings.LastIndex(b, "/")+1:]] = set
	}
	return result, nil
}

// typeRef names a type: its package's import path and its name.
type typeRef struct{ pkg, name string }

// structInfo is what one struct type declares: its fields' env tags (anonymous nested structs
// included) and the named types of its fields, which may hold more.
type structInfo struct {
	tags []string
	refs []typeRef
}

// readStructs parses one Go file of package pkg, adding its named struct types to types and
// every struct type it holds, named or not, to roots[pkg].
func readStructs(file, pkg string, types map[typeRef]structInfo, roots map[string][]structInfo) error {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	imports := map[string]string{} // name in this file → import path
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = path
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.TypeSpec:
			if st, ok := n.Type.(*ast.StructType); ok {
				types[typeRef{pkg, n.Name.Name}] = describe(st, pkg, imports)
			}
		case *ast.StructType:
			roots[pkg] = append(roots[pkg], describe(n, pkg, imports))
		}
		return true
	})
	return nil
}

// describe reads one struct type's fields.
func describe(st *ast.StructType, pkg string, imports map[string]string) structInfo {
	var s structInfo
	for _, field := range st.Fields.List {
		if field.Tag != nil {
			if raw, err := strconv.Unquote(field.Tag.Value); err == nil {
				if env, ok := reflect.StructTag(raw).Lookup("env"); ok && env != "" {
					s.tags = append(s.tags, env)
				}
			}
		}
		switch t := unwrap(field.Type).(type) {
		case *ast.Ident:
			s.refs = append(s.refs, typeRef{pkg, t.Name})
		case *ast.SelectorExpr:
			if x, ok := t.X.(*ast.Ident); ok && imports[x.Name] != "" {
				s.refs = append(s.refs, typeRef{imports[x.Name], t.Sel.Name})
			}
		case *ast.StructType:
			nested := describe(t, pkg, imports)
			s.tags = append(s.tags, nested.tags...)
			s.refs = append(s.refs, nested.refs...)
		}
	}
	return s
}

// unwrap strips pointers, slices and arrays from a field's type.
func unwrap(e ast.Expr) ast.Expr {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ArrayType:
			e = t.Elt
		default:
			return e
		}
	}
}

func splitComma(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// Names returns a binary's settings sorted, for messages.
func Names(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
