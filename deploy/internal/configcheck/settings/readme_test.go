package settings

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/config"
)

// settingCode is a setting written as code in markdown.
var settingCode = regexp.MustCompile("`((?:PLINTH|OTEL)_[A-Z0-9_]+)`")

// documented reads the tables of a markdown file: rows are the names written `NAME` in any
// row (lines that start with "|"); declared are those in the first cell of a settings row,
// whose second cell is a flag (`-name`) or empty, as in every service's config table.
func documented(t *testing.T, file string) (rows, declared map[string]bool) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rows, declared = map[string]bool{}, map[string]bool{}
	for line := range strings.Lines(string(src)) {
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			continue
		}
		for _, m := range settingCode.FindAllStringSubmatch(line, -1) {
			rows[m[1]] = true
		}
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) < 4 {
			continue
		}
		if second := strings.TrimSpace(cells[2]); second == "" || strings.HasPrefix(second, "`-") {
			for _, m := range settingCode.FindAllStringSubmatch(cells[1], -1) {
				declared[m[1]] = true
			}
		}
	}
	return rows, declared
}

// Each service declares its settings once, in its Config's env tags; everything else is
// generated from or checked against them (the launcher, compose, Tilt, Kubernetes). What is
// left to write by hand is the service's README: every setting of every binary of
// services/<S> is a row of a table in services/<S>/README.md, and the settings every binary
// shares (libs/platform/config's parts) are rows of libs/platform/README.md's table. So adding a
// setting touches the service alone: its Config and its README, which this test holds
// together. The other way, a settings row of a README names only settings of that service's
// binaries (a renamed or removed setting's row goes with it).
func TestEverySettingIsInItsServicesREADME(t *testing.T) {
	all, err := Binaries(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	mains, err := filepath.Glob(filepath.Join(repoRoot, "services", "*", "cmd", "*"))
	if err != nil {
		t.Fatal(err)
	}
	shared := config.Names(&config.Common{})
	platform, _ := documented(t, filepath.Join(repoRoot, "libs", "platform", "README.md"))
	for _, name := range shared {
		if !platform[name] {
			t.Errorf("libs/platform/README.md: the shared setting %s is in no table row", name)
		}
	}
	checked := 0
	ofService := map[string]map[string]bool{} // service → the settings of its binaries
	for _, m := range mains {
		binary, service := filepath.Base(m), filepath.Base(filepath.Dir(filepath.Dir(m)))
		if ofService[service] == nil {
			ofService[service] = map[string]bool{}
		}
		for name := range all[binary] {
			ofService[service][name] = true
		}
		readme := filepath.Join("services", service, "README.md")
		rows, _ := documented(t, filepath.Join(repoRoot, readme))
		for _, name := range Names(all[binary]) {
			if slices.Contains(shared, name) {
				continue
			}
			checked++
			if !rows[name] {
				t.Errorf("%s: %s's setting %s is in no table row (| `%s` | ... |)", readme, binary, name, name)
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked %d settings: the walk is broken", checked)
	}
	for _, service := range slices.Sorted(maps.Keys(ofService)) {
		readme := filepath.Join("services", service, "README.md")
		_, declared := documented(t, filepath.Join(repoRoot, readme))
		for _, name := range slices.Sorted(maps.Keys(declared)) {
			if !ofService[service][name] && !config.IsShared(name) {
				t.Errorf("%s: a settings row names %s, which no binary of services/%s reads (renamed or removed?)", readme, name, service)
			}
		}
	}
}
