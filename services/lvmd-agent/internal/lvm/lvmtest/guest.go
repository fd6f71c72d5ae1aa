package lvmtest

import (
	"context"
	"net"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/kernelvm"
)

// OnDeviceMapper runs the calling top-level test on device-mapper: here when this kernel has
// it, else in a VM with Debian's kernel (kernelvm.RunTestInGuest) that reaches the host's test
// database and NATS (TEST_DATABASE_URL, TEST_NATS_URL on 127.0.0.1) at the same addresses.
// It reports whether the test ran in the VM, in which case the caller returns at once:
//
//	if lvmtest.OnDeviceMapper(t) {
//		return
//	}
//
// env (KEY=VALUE) is added to the test's environment in the VM: paths of binaries built on
// the host, which the VM runs but does not build (software emulation is slow).
func OnDeviceMapper(t *testing.T, env ...string) bool {
	t.Helper()
	Require(t)
	return kernelvm.RunTestInGuest(t, kernelvm.Options{Env: env,
		ForwardPorts: loopbackPorts(os.Getenv("TEST_DATABASE_URL"), os.Getenv("TEST_NATS_URL"))})
}

// loopbackPorts are the ports of the URLs that name 127.0.0.1 or localhost.
func loopbackPorts(urls ...string) []int {
	var ports []int
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil {
			continue
		}
		host, port, err := net.SplitHostPort(u.Host)
		if n, perr := strconv.Atoi(port); err == nil && perr == nil && (host == "127.0.0.1" || host == "localhost") {
			ports = append(ports, n)
		}
	}
	return ports
}

// ThinPool makes a thin pool of size bytes in the volume group (needs device-mapper).
func (v *VG) ThinPool(t testing.TB, name string, size uint64) {
	t.Helper()
	if v.MetadataOnly {
		t.Fatal("lvmtest: thin pools need device-mapper: call OnDeviceMapper first")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := v.Runner.CreateThinPool(ctx, v.Name, name, size); err != nil {
		t.Fatalf("lvmtest: thin pool %s: %v", name, err)
	}
}
