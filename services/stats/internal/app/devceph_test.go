package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/cephlocal"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/stats/internal/cephtest"
)

// TestDevCephServesUntilStopped: `stats dev-ceph` (the compose file's ceph service) runs a
// cluster whose dashboard takes the administrator's password it wrote to -password-out (0600),
// until its context ends; then it stops every daemon and returns without an error.
func TestDevCephServesUntilStopped(t *testing.T) {
	if err := cephlocal.LookBinaries(cephlocal.Options{Dashboard: true}); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	p := cephtest.ReservePorts(t)
	dir, err := os.MkdirTemp("", "ceph") // short: the daemons' admin sockets live under it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	pwFile := filepath.Join(t.TempDir(), "dashboard", "password")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out testenv.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- devCeph(ctx, []string{"-dir", dir, "-port-base", strconv.Itoa(p.Base()), "-serve-addr", "0.0.0.0",
			"-memstore", "256M", "-password-out", pwFile}, &out)
	}()
	var pw []byte
	deadline := time.Now().Add(4 * time.Minute)
	for {
		if pw, err = os.ReadFile(pwFile); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("dev-ceph ended before serving: %v\n%s", err, out.String())
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no password file after 4 minutes:\n%s", out.String())
		}
	}
	if fi, err := os.Stat(pwFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("password file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	body, _ := json.Marshal(map[string]string{"username": cephlocal.DashboardUser, "password": string(pw)})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/api/auth", p.Dashboard), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/vnd.ceph.api.v1.0+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("dashboard login with the written password: %s", resp.Status)
	}
	if bytes.Contains([]byte(out.String()), pw) {
		t.Fatal("dev-ceph logged the dashboard password")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("dev-ceph after its stop: %v\n%s", err, out.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("dev-ceph did not stop within 2 minutes")
	}
	if port := p.Busy(); port != 0 {
		t.Fatalf("port %d still taken after the stop", port)
	}
}
