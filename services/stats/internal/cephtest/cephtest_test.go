package cephtest

import (
	"errors"
	"net/http"
	"syscall"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/cephlocal"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// TestClusterStartsAndLeavesNothing starts a cluster with every option, checks that each
// endpoint answers and that the dashboard credentials are filled in, and after the cluster's
// cleanups ran finds none of its daemons alive. (libs/platform/cephlocal's own test covers
// logins, restarts and S3.) Without Ceph it skips loudly (fails under PLINTH_TEST_STRICT=1)
// before the subtest, so the check after it never runs on a cluster that did not start.
func TestClusterStartsAndLeavesNothing(t *testing.T) {
	if err := cephlocal.LookBinaries(cephlocal.Options{Dashboard: true, RGW: true}); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	var pids map[string]int
	ok := t.Run("cluster", func(t *testing.T) {
		c := Start(t, Options{Dashboard: true, RGW: true})
		pids = c.Local().PIDs()
		if st := c.Status(t); st.FSID != c.FSID || st.Health.Status != "HEALTH_OK" {
			t.Fatalf("status %+v, want fsid %s and HEALTH_OK", st, c.FSID)
		}
		if c.DashboardUser == "" || c.DashboardPassword == "" {
			t.Fatal("no dashboard credentials")
		}
		for _, url := range []string{c.PrometheusURL, c.DashboardURL + "/", c.RGWURL} {
			resp, err := http.Get(url)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %s", url, resp.Status)
			}
		}
	})
	if !ok || len(pids) != 4 {
		t.Fatalf("the cluster did not start (see the subtest): daemons %v", pids)
	}
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) still exists after the test's cleanup: %v", name, pid, err)
		}
	}
}
