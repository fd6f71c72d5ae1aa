package cephtest

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestClusterStartsAndLeavesNothing starts a cluster with every option, checks each endpoint
// answers as the real thing does, and after the cluster's cleanups ran finds no process still
// using its directory.
func TestClusterStartsAndLeavesNothing(t *testing.T) {
	var dir string
	t.Run("cluster", func(t *testing.T) {
		c := Start(t, Options{Dashboard: true, RGW: true})
		dir = c.Dir
		if st := c.Status(t); st.FSID != c.FSID || st.Health.Status != "HEALTH_OK" {
			t.Fatalf("status %+v, want fsid %s and HEALTH_OK", st, c.FSID)
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
		body := `{"username":"` + c.DashboardUser + `","password":"` + c.DashboardPassword + `"}`
		req, _ := http.NewRequest(http.MethodPost, c.DashboardURL+"/api/auth", strings.NewReader(body))
		req.Header.Set("Accept", "application/vnd.ceph.api.v1.0+json")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("dashboard login: %s", resp.Status)
		}
	})
	if dir == "" {
		t.Fatal("the cluster did not start")
	}
	if left := processesUsing(t, dir); len(left) > 0 {
		t.Fatalf("processes left running: %v", left)
	}
}

// processesUsing lists live processes whose command line mentions dir.
func processesUsing(t *testing.T, dir string) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), dir) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(stat), ") Z ") {
			continue // a zombie holds no resources and is about to be reaped
		}
		found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return found
}
