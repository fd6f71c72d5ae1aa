package launcher

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeAptGet puts an apt-get on PATH that records its arguments in calls and fails an
// install until an update ran when fresh is set (a fresh machine's empty package lists).
func fakeAptGet(t *testing.T, fresh bool) (calls string) {
	t.Helper()
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	script := `#!/bin/sh
echo "$*" >> ` + calls + `
case "$*" in
*" update") touch ` + filepath.Join(dir, "updated") + `; exit 0 ;;
esac
if [ "` + map[bool]string{true: "fresh", false: ""}[fresh] + `" = fresh ] && [ ! -e ` + filepath.Join(dir, "updated") + ` ]; then
	echo "E: Unable to locate package $5" >&2
	exit 100
fi
echo "Setting up $5 ..."
`
	if err := os.WriteFile(filepath.Join(dir, "apt-get"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(filepath.ListSeparator)+os.Getenv("PATH"))
	return calls
}

func readCalls(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// TestAptGetUpdatesOnceThenRetries: one install call for every package; on a fresh machine
// the failed install is followed by one update and a second install.
func TestAptGetUpdatesOnceThenRetries(t *testing.T) {
	calls := fakeAptGet(t, true)
	var out bytes.Buffer
	apt := &aptGet{out: &out}
	if err := apt.install(context.Background(), "lvm2", "etcd-server"); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	install := "-o DPkg::Lock::Timeout=300 install -y --no-install-recommends lvm2 etcd-server"
	want := []string{install, "-o DPkg::Lock::Timeout=300 update", install}
	if got := readCalls(t, calls); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("apt-get calls\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(out.String(), "Unable to locate package") || !strings.Contains(out.String(), "Setting up") {
		t.Errorf("apt's output did not reach its pane: %q", out.String())
	}
}

func TestAptGetInstallsAtOnceWhenListsAreFresh(t *testing.T) {
	calls := fakeAptGet(t, false)
	apt := &aptGet{out: &bytes.Buffer{}}
	if err := apt.install(context.Background(), "curl"); err != nil {
		t.Fatal(err)
	}
	if got := readCalls(t, calls); len(got) != 1 || !strings.HasSuffix(got[0], "install -y --no-install-recommends curl") {
		t.Fatalf("apt-get calls %q, want one install", got)
	}
}
