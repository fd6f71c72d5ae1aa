package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
)

// TestMakeUpOnAFreshMachine runs the launcher where the machine looks fresh: in a private
// mount namespace, lvm, etcd, make and the Ceph monitor are /dev/null and the checkout's bin/
// (the Kubernetes binaries) is empty. With -no-install each missing piece is named with the
// package that brings it, lvmd-agent is skipped, everything else starts, and kaas refuses a
// cluster at once naming etcd (it used to accept it and fail 3 minutes later on a timeout).
func TestMakeUpOnAFreshMachine(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		skipOrFail(t, "hiding commands takes a private mount namespace: run as root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		skipOrFail(t, "no unshare (util-linux) to hide commands in a mount namespace")
	}
	root := repoRoot(t)
	bin := buildLauncher(t, root)
	home := newHome(t)
	// Bind mounts in a namespace of the launcher's own: the machine and its other tests see
	// everything as it is, the launcher and the services it starts see a fresh machine.
	var mounts []string
	for _, path := range []string{"/usr/sbin/lvm", "/usr/bin/etcd", "/usr/bin/make", "/usr/bin/ceph-mon"} {
		if _, err := os.Stat(path); err == nil {
			mounts = append(mounts, "mount --bind /dev/null "+path)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	mounts = append(mounts, "mount -t tmpfs plinth-fresh-bin "+filepath.Join(root, "bin"))
	wrapper := filepath.Join(t.TempDir(), "fresh-plinth-up")
	script := "#!/bin/sh\nexec unshare --mount --propagation private -- sh -ec '" +
		strings.Join(mounts, "; ") + `; exec "$0" "$@"' ` + bin + ` "$@"` + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	password, dbName := randomHex(t, 12), "plinth_e2e_fresh_"+randomHex(t, 4)
	l := startLauncher(t, wrapper, root, home, freeOffset(t, bandFresh),
		"PLINTH_DATABASE_NAME="+dbName, "PLINTH_ADMIN_PASSWORD="+password, "PLINTH_NO_INSTALL=1", "PLINTH_NO_CEPH=0")
	e := l.waitEndpoints(t, readyTimeout)
	t.Cleanup(func() {
		l.interrupt(t, stopTimeout)
		dropDatabase(t, e.Database, dbName)
	})

	out := l.log.String()
	for _, want := range []string{
		"lvmd-agent needs lvm (Debian package lvm2): apt-get install lvm2",
		"kaas needs /usr/bin/etcd (Debian package etcd-server): apt-get install etcd-server",
		"kaas needs make (Debian package make): apt-get install make",
		"stats needs ceph-mon (Debian package ceph-mon): apt-get install ceph-mon",
		"not installing (-no-install): apt-get install ",
		"lvmd-agent: skipped: lvm is missing (apt-get install lvm2)",
		"kaas runs without /usr/bin/etcd: ",
		"kaas runs without make: ",
		"stats runs without ceph-mon",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the launcher did not say %q", want)
		}
	}
	var started []string
	for _, s := range e.Services {
		started = append(started, s.Name)
	}
	for _, name := range []string{"auth", "stats", "kaas", "vagrant-server", "vagrant-runner", "cnpgi-plugin", "gateway"} {
		if !slices.Contains(started, name) {
			t.Errorf("%s did not start (started: %v)", name, started)
		}
	}
	if slices.Contains(started, "lvmd-agent") {
		t.Error("lvmd-agent started without lvm")
	}

	conn, err := grpc.NewClient(e.Gateway, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	login, err := authpb.NewAuthServiceClient(conn).Login(callCtx(t), &authpb.LoginRequest{Username: "admin", Password: password})
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	began := time.Now()
	_, err = kaaspb.NewClusterClient(conn).CreateCluster(withToken(callCtx(t), login.GetToken()), &kaaspb.CreateClusterMsg{
		Name: "fresh" + randomHex(t, 3), K8SVersion: "v1.33.13", ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 1}})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "/usr/bin/etcd") {
		t.Errorf("CreateCluster without etcd: %v, want FailedPrecondition naming /usr/bin/etcd", err)
	}
	t.Logf("CreateCluster refused after %s: %v", time.Since(began).Round(time.Millisecond), err)
}
