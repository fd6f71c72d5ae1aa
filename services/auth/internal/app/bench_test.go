package app_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/latency"
	"github.com/plinth-dev/plinth/services/auth/internal/app"
)

// latencies collects per-call durations from parallel benchmark goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d []time.Duration) { l.mu.Lock(); l.d = append(l.d, d...); l.mu.Unlock() }

func (l *latencies) report(b *testing.B) {
	slices.Sort(l.d)
	if len(l.d) == 0 {
		return
	}
	pct := func(p float64) float64 { return float64(latency.Percentile(l.d, p).Microseconds()) }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// benchDownstream measures calls through the shared interceptor of a downstream service.
func benchDownstream(b *testing.B, cacheTTL time.Duration) {
	e := newEnv(b)
	authConn := e.start(b, e.config(b))
	svc, _, _ := downstream(b, e.natsURL, authConn, cacheTTL)
	ctx := bearer(b.Context(), login(b, b.Context(), authpb.NewAuthServiceClient(authConn), "admin", "admin-secret-pw").GetToken())
	var all latencies
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			start := time.Now()
			resp, err := svc.CheckToken(ctx, &authpb.CheckTokenRequest{})
			mine = append(mine, time.Since(start))
			if err != nil || !resp.GetSuccess() {
				b.Error(err)
				return
			}
		}
		all.add(mine)
	})
	b.StopTimer()
	all.report(b)
}

// BenchmarkInterceptorWarmCache: every call after the first is answered from the cache.
func BenchmarkInterceptorWarmCache(b *testing.B) { benchDownstream(b, authn.MaxCacheTTL) }

// BenchmarkInterceptorNoCache: every call asks auth's CheckToken (one Postgres lookup).
func BenchmarkInterceptorNoCache(b *testing.B) { benchDownstream(b, 0) }

// BenchmarkLogin is one Login RPC at the production argon2id parameters (19 MiB, t=2, p=1).
func BenchmarkLogin(b *testing.B) {
	e := newEnv(b)
	cfg := e.config(b, func(c *app.Config) {
		c.HashMemoryKiB, c.HashIterations = 19456, 2
		c.LockPairAfter, c.LockAddrAfter = 1<<30, 1<<30
		c.MaxTokens = 0 // every login is admin's: b.N may pass the token quota
	})
	c := authpb.NewAuthServiceClient(e.start(b, cfg))
	var all latencies
	b.ResetTimer()
	var mine []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := c.Login(b.Context(), &authpb.LoginRequest{Username: "admin", Password: "admin-secret-pw"}); err != nil {
			b.Fatal(err)
		}
		mine = append(mine, time.Since(start))
	}
	all.add(mine)
	all.report(b)
}
