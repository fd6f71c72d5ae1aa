package pg

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// MigrationSet is a line of migrations versioned on its own, recorded in
// schema_migrations under Source. Libraries that own tables in a service's schema
// (the events outbox) ship one; the service's own migrations are ServiceSource.
type MigrationSet struct {
	// Source identifies the line: lowercase, e.g. "events". Never rename it.
	Source string
	// FS holds NNN_name.up.sql files (any directory depth).
	FS fs.FS
}

type migration struct {
	version  int
	name     string // file name without directory
	sql      string
	checksum string
}

type loadedSet struct {
	source     string
	migrations []migration // ordered by version: 1..n without gaps
}

var fileRE = regexp.MustCompile(`^(\d+)_([a-z0-9_]+)\.up\.sql$`)

func loadSets(sets []MigrationSet) ([]loadedSet, error) {
	seen := map[string]bool{}
	out := make([]loadedSet, 0, len(sets))
	for _, s := range sets {
		if !identRE.MatchString(s.Source) {
			return nil, fmt.Errorf("migration source %q is invalid: use lowercase letters, digits, underscores", s.Source)
		}
		if seen[s.Source] {
			return nil, fmt.Errorf("migration source %q given twice", s.Source)
		}
		seen[s.Source] = true
		ms, err := load(s.FS)
		if err != nil {
			return nil, fmt.Errorf("migrations %q: %w", s.Source, err)
		}
		out = append(out, loadedSet{source: s.Source, migrations: ms})
	}
	return out, nil
}

// load reads and validates one set. Misnamed .sql files are errors rather than
// silently skipped: a typo would otherwise leave a migration unapplied.
func load(fsys fs.FS) ([]migration, error) {
	if fsys == nil {
		return nil, nil
	}
	var ms []migration
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".sql") {
			return nil
		}
		base := path.Base(p)
		m := fileRE.FindStringSubmatch(base)
		if m == nil {
			return fmt.Errorf("%s: migration files must be named NNN_name.up.sql "+
				"(lowercase name; migrations are append-only, there are no down files)", p)
		}
		v, err := strconv.Atoi(m[1])
		if err != nil || v < 1 {
			return fmt.Errorf("%s: version must be a positive number", p)
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ms = append(ms, migration{version: v, name: base, sql: string(body), checksum: hex.EncodeToString(sum[:])})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			if i > 0 && ms[i-1].version == m.version {
				return nil, fmt.Errorf("version %d used twice (%s and %s)", m.version, ms[i-1].name, m.name)
			}
			return nil, fmt.Errorf("version %d missing before %s: versions must run 1, 2, 3, ... without gaps", i+1, m.name)
		}
	}
	return ms, nil
}
