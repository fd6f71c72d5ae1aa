package pglocal

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
)

// errNoBinaries tells the operator exactly what is missing and how to get it.
var errNoBinaries = errors.New("PostgreSQL server binaries (initdb, pg_ctl) not found on PATH " +
	"or in /usr/lib/postgresql/*/bin: install them with `apt-get install postgresql` " +
	"(Debian/Ubuntu) or point PLINTH_DATABASE_URL at an existing server")

// FindBinaries returns the directory holding initdb, pg_ctl and postgres. It prefers
// the newest /usr/lib/postgresql/<major>/bin (Debian puts the server binaries there,
// off PATH) and falls back to PATH. Symlinks are resolved, because pg_ctl locates the
// postgres executable next to its own real path.
func FindBinaries() (string, error) {
	if dir, ok := newestDebianBinDir("/usr/lib/postgresql"); ok {
		return dir, nil
	}
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		return "", errNoBinaries
	}
	real, err := filepath.EvalSymlinks(initdb)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", initdb, err)
	}
	dir := filepath.Dir(real)
	if !hasServerBinaries(dir) {
		return "", errNoBinaries
	}
	return dir, nil
}

// newestDebianBinDir picks the highest numeric major version under root that has a
// complete set of server binaries.
func newestDebianBinDir(root string) (string, bool) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return "", false
	}
	var majors []float64
	byMajor := map[float64]string{}
	for _, e := range entries {
		v, err := strconv.ParseFloat(e.Name(), 64) // "15", or "9.6" for old clusters
		if err != nil {
			continue
		}
		dir := filepath.Join(root, e.Name(), "bin")
		if hasServerBinaries(dir) {
			majors = append(majors, v)
			byMajor[v] = dir
		}
	}
	if len(majors) == 0 {
		return "", false
	}
	sort.Float64s(majors)
	return byMajor[majors[len(majors)-1]], true
}

func hasServerBinaries(dir string) bool {
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}
