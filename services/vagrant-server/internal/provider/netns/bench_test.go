package netns_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkSandboxUp reports what a sandboxed machine costs: the time of an up from nothing
// (network, root filesystem, container) and the memory its cgroup holds when idle.
//
//	go test -run '^$' -bench SandboxUp -benchtime 5x ./internal/provider/netns/
func BenchmarkSandboxUp(b *testing.B) {
	p := kernelProvider(b)
	ctx := context.Background()
	var up time.Duration
	var mem int64
	for i := 0; b.Loop(); i++ {
		id := "b" + strconv.Itoa(i) + randomHex(b, 3)
		start := time.Now()
		if err := p.Up(ctx, id); err != nil {
			b.Fatal(err)
		}
		up += time.Since(start)
		usage, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory/plinth-vagrant-netns", p.Namespace(id), "memory.usage_in_bytes"))
		if err != nil {
			b.Fatal(err)
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(string(usage)), 10, 64)
		mem += n
		if err := p.Destroy(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(up.Milliseconds())/float64(b.N), "up-ms/machine")
	b.ReportMetric(float64(mem)/float64(b.N)/(1<<20), "idle-MiB/machine")
}
