package kernelvm_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/kernelvm"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// run is kernelvm.Run with the console in the test's log, skipping (or failing when strict)
// where no guest can be had.
func run(t *testing.T, o kernelvm.Options) kernelvm.Result {
	t.Helper()
	o.Log = func(line string) { t.Log(line) }
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	res, err := kernelvm.Run(ctx, o)
	if errors.Is(err, kernelvm.ErrUnavailable) {
		testenv.SkipOrFail(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kernel %s: boot %v, %v in all", res.Kernel, res.Boot.Round(100*time.Millisecond), res.Elapsed.Round(100*time.Millisecond))
	return res
}

// One boot checks what Run promises of a command: its exit status, its output (standard
// output and error together), its directory and exactly its environment, in a guest whose
// kernel has device-mapper and its targets loaded.
func TestRunReportsExitStatusAndOutput(t *testing.T) {
	dir := t.TempDir() // the host's: the guest sees it at the same path
	if err := os.WriteFile(dir+"/from-host", []byte("written on the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	value := `it's "quoted" $HOME; and	tabbed`
	script := `echo "to stdout"; echo "to stderr" >&2
echo "pwd=$(pwd)"; cat from-host
echo "value=$KERNELVM_TEST_VALUE"
echo "guest=$` + kernelvm.GuestEnv + ` udev=$DM_DISABLE_UDEV home=${HOME-unset}"
grep -q device-mapper /proc/misc && test -c /dev/mapper/control && echo "device-mapper: yes"
for target in thin-pool thin snapshot; do dmsetup targets | grep -q "^$target " && echo "target $target"; done
exit 7`
	res := run(t, kernelvm.Options{
		Command: []string{"sh", "-c", script},
		Env:     []string{"KERNELVM_TEST_VALUE=" + value, "PATH=/usr/sbin:/usr/bin:/sbin:/bin"},
		Dir:     dir,
	})
	if res.ExitCode != 7 {
		t.Errorf("exit code %d, want 7", res.ExitCode)
	}
	want := strings.Join([]string{
		"to stdout", "to stderr", "pwd=" + dir, "written on the host", "value=" + value,
		"guest=1 udev=1 home=unset", "device-mapper: yes", "target thin-pool", "target thin", "target snapshot",
	}, "\n") + "\n"
	if res.Output != want {
		t.Errorf("output:\n%s\nwant:\n%s", res.Output, want)
	}
	if _, err := os.Stat(dir + "/from-host"); err != nil {
		t.Errorf("the host's file: %v", err)
	}
}
