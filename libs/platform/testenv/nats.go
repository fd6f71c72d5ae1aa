package testenv

import (
	"os"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/natsembed"
)

// NATS returns the URL of a JetStream-enabled NATS server for this test: TEST_NATS_URL
// when set (shared: name streams and subjects with UniqueName), otherwise an embedded
// server with its store in t.TempDir(), shut down when the test ends.
func NATS(t testing.TB) string {
	t.Helper()
	if url := os.Getenv("TEST_NATS_URL"); url != "" {
		return url
	}
	s := NATSServer(t, 0, t.TempDir())
	return s.ClientURL()
}

// NATSServer starts an embedded JetStream server on port (0: random) with its store in
// storeDir, shut down when the test ends. Tests that restart NATS use it directly.
func NATSServer(t testing.TB, port int, storeDir string) *natsembed.Server {
	t.Helper()
	s, err := natsembed.Start(natsembed.Options{Port: port, StoreDir: storeDir})
	if err != nil {
		t.Fatalf("testenv: embedded NATS: %v", err)
	}
	t.Cleanup(s.Shutdown)
	return s
}
