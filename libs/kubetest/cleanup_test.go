package kubetest_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/kubetest"
)

// Environment of TestHelperCluster when this test binary runs itself as a child.
const (
	helperModeEnv = "KUBETEST_HELPER_MODE" // "fail" or "hang"
	helperOutEnv  = "KUBETEST_HELPER_OUT"  // file to write the cluster's directory to
)

// TestHelperCluster is not a test on its own: TestNoLeftovers runs this binary again with
// only this function selected. It starts a cluster, reports where its files are, then fails
// — or hangs until it is killed, as `go test -timeout` kills a stuck test binary.
func TestHelperCluster(t *testing.T) {
	mode := os.Getenv(helperModeEnv)
	if mode == "" {
		return
	}
	c := kubetest.Start(t, kubetest.Options{ControllerManager: true})
	if err := os.WriteFile(os.Getenv(helperOutEnv), []byte(filepath.Dir(c.KubeconfigPath())), 0o600); err != nil {
		t.Fatal(err)
	}
	if mode == "hang" {
		select {}
	}
	t.Fatal("failing on purpose: the cluster must still be stopped and removed")
}

// processesUsing lists the processes whose command line mentions dir: every component of a
// cluster is started with paths inside its directory. TestNoLeftovers/hang checks that it
// finds the running ones, so an empty answer is not a blind spot.
func processesUsing(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
			continue
		}
		name, _, _ := strings.Cut(string(cmdline), "\x00")
		found = append(found, e.Name()+" "+filepath.Base(name))
	}
	return found
}

// TestNoLeftovers: whether the test using a cluster fails or its binary is killed, no
// component outlives it.
func TestNoLeftovers(t *testing.T) {
	t.Parallel()
	kubetest.Binary(t, "kube-apiserver-"+kubetest.DefaultVersion)
	kubetest.Binary(t, "kube-controller-manager-"+kubetest.DefaultVersion)
	kubetest.Etcd(t) // the helper would skip and never report a cluster
	for _, mode := range []string{"fail", "hang"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			out := filepath.Join(tmp, "cluster-dir")
			// A file, not a buffer: the child writes while the test reads.
			logFile, err := os.Create(filepath.Join(tmp, "helper.log"))
			if err != nil {
				t.Fatal(err)
			}
			defer logFile.Close()
			helperLog := func() string {
				data, _ := os.ReadFile(logFile.Name())
				return string(data)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperCluster$", "-test.v")
			cmd.Env = append(os.Environ(), helperModeEnv+"="+mode, helperOutEnv+"="+out)
			cmd.Stdout, cmd.Stderr = logFile, logFile
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var dir string
			eventually(t, 2*time.Minute, "helper's cluster up", func(context.Context) (bool, string) {
				data, err := os.ReadFile(out)
				dir = string(data)
				return err == nil && dir != "", helperLog()
			})
			if mode == "hang" {
				if running := processesUsing(dir); len(running) < 3 {
					t.Fatalf("while the helper runs, processes using %s = %v; want etcd, apiserver, controller-manager", dir, running)
				}
				_ = cmd.Process.Kill()
			}
			if err := cmd.Wait(); err == nil {
				t.Fatalf("helper (%s) exited 0; it must fail or be killed:\n%s", mode, helperLog())
			}
			eventually(t, 30*time.Second, "no component left running", func(context.Context) (bool, string) {
				left := processesUsing(dir)
				return len(left) == 0, fmt.Sprint(left)
			})
			if mode == "fail" {
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("cluster directory %s still there after the failed test: %v", dir, err)
				}
			}
		})
	}
}
