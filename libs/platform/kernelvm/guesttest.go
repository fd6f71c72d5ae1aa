package kernelvm

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// RunTestInGuest runs the calling test in a guest when this host has no device-mapper, and
// reports whether it did: the caller then returns at once, its outcome decided here.
//
//	func TestThinSnapshot(t *testing.T) {
//		if kernelvm.RunTestInGuest(t, kernelvm.Options{ForwardPorts: []int{5432, 4222}}) {
//			return
//		}
//		// runs on a host with device-mapper, or in the guest
//	}
//
// It returns false, doing nothing, on a host with device-mapper or inside the guest.
// Otherwise it boots a guest that runs this test binary (shared with the guest at its own
// path) with -test.run '^<name>$' -test.v -test.count=1 in the current directory, with the
// environment passed through (see PassEnv) plus opts.Env and the ports of
// opts.ForwardPorts forwarded; every line of the guest's console goes to t.Log as it
// comes. The test fails when it fails in the guest or did not run there, and is skipped
// when it skipped there. Only top-level tests can run this way: a subtest fails at once.
// opts.Command and opts.Dir must be empty; opts.Log defaults to t.Log. When the guest cannot
// be had (no QEMU, no kernel package) the test is skipped loudly, or fails under
// PLINTH_TEST_STRICT=1 (testenv.SkipOrFail).
func RunTestInGuest(t *testing.T, opts Options) bool {
	t.Helper()
	if InGuest() || HostHasDeviceMapper() {
		return false
	}
	runInGuest(t, opts)
	return true
}

// runInGuest runs the calling test in a guest, whatever the host has.
func runInGuest(t *testing.T, opts Options) {
	t.Helper()
	name := t.Name()
	if strings.Contains(name, "/") {
		t.Fatalf("kernelvm: %s is a subtest; only a top-level test can run in the guest", name)
	}
	if len(opts.Command) > 0 || opts.Dir != "" {
		t.Fatal("kernelvm: RunTestInGuest sets Command and Dir itself")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("kernelvm: this test binary: %v", err)
	}
	if opts.Dir, err = os.Getwd(); err != nil {
		t.Fatalf("kernelvm: working directory: %v", err)
	}
	ctx, cancel := testContext(t)
	defer cancel()
	opts.Command = []string{exe, "-test.run", "^" + regexp.QuoteMeta(name) + "$", "-test.v", "-test.count=1"}
	if d, ok := ctx.Deadline(); ok {
		// The guest's test times out first, so its goroutine dump reaches the log.
		if left := time.Until(d) - time.Minute; left > time.Minute {
			opts.Command = append(opts.Command, "-test.timeout", left.Round(time.Second).String())
		}
	}
	opts.Env = append(PassEnv(os.Environ()), opts.Env...)
	if opts.Log == nil {
		opts.Log = func(line string) { t.Log(line) }
	}
	res, err := Run(ctx, opts)
	if errors.Is(err, ErrUnavailable) {
		testenv.SkipOrFail(t, err.Error())
		return
	}
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Logf("kernelvm: %s ran in a guest with kernel %s: exit status %d, boot %v, %v in all",
		name, res.Kernel, res.ExitCode, res.Boot.Round(100*time.Millisecond), res.Elapsed.Round(100*time.Millisecond))
	switch outcome := testOutcome(res.Output, name); {
	case res.ExitCode != 0:
		t.Fatalf("kernelvm: %s failed in the guest (exit status %d): its output is above", name, res.ExitCode)
	case outcome == "PASS":
	case outcome == "SKIP":
		t.Skipf("kernelvm: %s skipped in the guest: see its output above", name)
	default:
		t.Fatalf("kernelvm: %s did not run in the guest (no \"--- PASS: %s\" line): its output is above", name, name)
	}
}

// testOutcome finds the top-level "--- PASS|FAIL|SKIP: name (…)" line of go test -v output.
func testOutcome(output, name string) string {
	for _, line := range strings.Split(output, "\n") {
		for _, o := range []string{"PASS", "FAIL", "SKIP"} {
			if strings.HasPrefix(line, "--- "+o+": "+name+" (") {
				return o
			}
		}
	}
	return ""
}

// testContext ends a minute before the test binary's deadline, so a guest that hangs is
// killed and reported before the binary panics.
func testContext(t *testing.T) (context.Context, context.CancelFunc) {
	if d, ok := t.Deadline(); ok {
		return context.WithDeadline(t.Context(), d.Add(-30*time.Second))
	}
	return context.WithCancel(t.Context())
}

// passedEnv are the names, and passedPrefixes the prefixes, of the variables PassEnv keeps.
func passedEnv() []string {
	return []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "TERM"}
}

func passedPrefixes() []string {
	return []string{"PLINTH_", "TEST_", "GO", "CGO_", "PG", "AWS_", "NATS_", "LC_"}
}

// PassEnv keeps of environ what a test in the guest needs from the host's environment:
// PLINTH_*, TEST_*, GO* (GOFLAGS, GORACE, GOTRACEBACK…), CGO_*, PG* (PGPASSFILE…), AWS_*,
// NATS_*, LC_*, and PATH, HOME, USER, LOGNAME, LANG, TZ, TMPDIR, TERM.
func PassEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == GuestEnv {
			continue
		}
		keep := false
		for _, n := range passedEnv() {
			keep = keep || k == n
		}
		for _, p := range passedPrefixes() {
			keep = keep || strings.HasPrefix(k, p)
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
