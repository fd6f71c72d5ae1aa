package kubetest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/plinth-dev/plinth/libs/kubetest/internal/kube"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// etcdHint says how to get the etcd the apiserver stores its objects in.
const etcdHint = "etcd not found on PATH or at /usr/bin/etcd: install Debian's etcd-server (apt-get install etcd-server)"

// Etcd returns the etcd binary Start runs. When it is missing the test is skipped, or fails
// under PLINTH_TEST_STRICT=1, saying what to install.
func Etcd(t testing.TB) string {
	t.Helper()
	path, err := findEtcd()
	if err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	return path
}

// findEtcd returns the etcd binary, or how to get it.
func findEtcd() (string, error) {
	if path, err := kube.Etcd(); err == nil {
		return path, nil
	}
	return "", fmt.Errorf("%s", etcdHint)
}

// startEtcd runs a single-member etcd with its data in dir/etcd, listening on loopback only,
// and returns it with its client URL once /health answers true.
func startEtcd(binary, dir string) (*process, string, error) {
	var (
		proc      *process
		clientURL string
	)
	err := withFreshPorts(2, func(ports []int) error {
		clientURL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
		peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
		p, err := startReady("etcd", filepath.Join(dir, "etcd.log"), binary, []string{
			"--name=kubetest",
			"--data-dir=" + filepath.Join(dir, "etcd"),
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=kubetest=" + peerURL,
			"--initial-cluster-state=new",
			// A test cluster never needs the default 100,000-entry raft log in memory.
			"--snapshot-count=5000",
			"--log-level=warn",
		}, kube.HTTPProbe(clientURL+"/health", "", nil, `"health":"true"`))
		proc = p
		return err
	})
	return proc, clientURL, err
}
