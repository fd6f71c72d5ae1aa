package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Version is a Kubernetes release, vMAJOR.MINOR.PATCH.
type Version struct {
	Major, Minor, Patch int
}

func (v Version) String() string { return fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Compare orders versions: -1, 0 or 1.
func (v Version) Compare(o Version) int {
	switch {
	case v.Major != o.Major:
		return cmpInt(v.Major, o.Major)
	case v.Minor != o.Minor:
		return cmpInt(v.Minor, o.Minor)
	}
	return cmpInt(v.Patch, o.Patch)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ParseVersion reads "v1.33.13" or "1.33.13". Pre-release and build suffixes are not
// accepted: a catalog holds released versions only.
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(strings.TrimPrefix(s, "v"), ".")
	if len(parts) != 3 {
		return Version{}, errors.New("want vMAJOR.MINOR.PATCH, e.g. v1.33.13")
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > 1<<20 || (len(p) > 1 && p[0] == '0') {
			return Version{}, errors.New("want vMAJOR.MINOR.PATCH, e.g. v1.33.13")
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, nil
}

// Catalog is the set of Kubernetes versions kaas can run, and the one a cluster gets when
// its request names none.
type Catalog struct {
	versions []Version // ascending
	def      Version
}

// NewCatalog builds a catalog from version strings; def empty means the newest.
func NewCatalog(versions []string, def string) (Catalog, error) {
	if len(versions) == 0 {
		return Catalog{}, errors.New("the version catalog is empty")
	}
	var c Catalog
	for _, s := range versions {
		v, err := ParseVersion(strings.TrimSpace(s))
		if err != nil {
			return Catalog{}, fmt.Errorf("version %q: %w", s, err)
		}
		if slices.Contains(c.versions, v) {
			return Catalog{}, fmt.Errorf("version %s is listed twice", v)
		}
		c.versions = append(c.versions, v)
	}
	slices.SortFunc(c.versions, Version.Compare)
	c.def = c.versions[len(c.versions)-1]
	if def != "" {
		v, err := ParseVersion(def)
		if err != nil || !slices.Contains(c.versions, v) {
			return Catalog{}, fmt.Errorf("default version %q is not in the catalog %s", def, c)
		}
		c.def = v
	}
	return c, nil
}

// String lists the catalog, e.g. "v1.32.13, v1.33.13".
func (c Catalog) String() string {
	names := make([]string, len(c.versions))
	for i, v := range c.versions {
		names[i] = v.String()
	}
	return strings.Join(names, ", ")
}

// Versions returns the catalog, oldest first.
func (c Catalog) Versions() []Version { return slices.Clone(c.versions) }

// Default is the version a cluster gets when its request names none.
func (c Catalog) Default() Version { return c.def }

// Contains reports whether v is in the catalog.
func (c Catalog) Contains(v Version) bool { return slices.Contains(c.versions, v) }

// UpgradesFrom lists the catalog versions a cluster running v may move to, oldest first.
// Kubernetes' version skew policy lets a control plane move one minor version at a time, so
// these are the newer patches of v's minor and the releases of the next minor.
func (c Catalog) UpgradesFrom(v Version) []Version {
	var out []Version
	for _, t := range c.versions {
		sameMinor := t.Major == v.Major && t.Minor == v.Minor && t.Patch > v.Patch
		nextMinor := t.Major == v.Major && t.Minor == v.Minor+1
		if sameMinor || nextMinor {
			out = append(out, t)
		}
	}
	return out
}
