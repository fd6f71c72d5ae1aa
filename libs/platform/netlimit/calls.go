package netlimit

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// CallLimits bound the calls one client address has in progress across its connections.
type CallLimits struct {
	// PerClient is the most calls (streams included) one client address (ClientKey) has in
	// progress; 0: no cap.
	PerClient int
	// Setting names PerClient's setting, in the refusal, the metrics' help and the log.
	Setting string
	// Log, when set, receives an INFO line when a client address is refused a call, at most
	// once per address per LogEvery; nil: refusals are only counted.
	Log *slog.Logger
	// Discard, when set, is given the request of every unary call refused: grpc-go decodes a
	// unary request before any interceptor runs, so a server whose codec keeps a note per
	// decoded message (libs/platform/server's) forgets it here.
	Discard func(req any)
}

// Calls counts the calls each client address has in progress on a gRPC server and refuses
// one over the cap with ResourceExhausted before the handler sees it. Calls from a unix
// socket have no address and are not counted.
type Calls struct {
	limits CallLimits
	log    *refusalLog

	mu     sync.Mutex
	client map[netip.Addr]int

	refused atomic.Int64
}

// NewCalls counts calls against l.
func NewCalls(l CallLimits) *Calls {
	return &Calls{limits: l, client: map[netip.Addr]int{},
		log: newRefusalLog(l.Log, "call refused: too many in progress from this client address")}
}

// Refused counts the calls refused by the cap.
func (c *Calls) Refused() int64 { return c.refused.Load() }

// ServerOptions are the interceptors that count calls; give them early, so that a refused
// call costs little more, but after any interceptor that must see every decoded request
// (grpc-go decodes a unary request before the interceptors run) unless Discard releases it.
func (c *Calls) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(c.Unary), grpc.ChainStreamInterceptor(c.Stream)}
}

// Unary is the interceptor counting unary calls.
func (c *Calls) Unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	release, err := c.begin(ctx)
	if err != nil {
		if c.limits.Discard != nil {
			c.limits.Discard(req)
		}
		return nil, err
	}
	defer release()
	return handler(ctx, req)
}

// Stream is the interceptor counting streams.
func (c *Calls) Stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	release, err := c.begin(ss.Context())
	if err != nil {
		return err
	}
	defer release()
	return handler(srv, ss)
}

// begin counts a call of the client of ctx in, or refuses it.
func (c *Calls) begin(ctx context.Context) (release func(), err error) {
	p, _ := peer.FromContext(ctx)
	if c.limits.PerClient <= 0 || p == nil {
		return func() {}, nil
	}
	key, ok := peerKey(p.Addr)
	if !ok {
		return func() {}, nil
	}
	c.mu.Lock()
	if c.client[key] >= c.limits.PerClient {
		c.mu.Unlock()
		c.refused.Add(1)
		c.log.note(key, "limit", c.limits.PerClient, "setting", c.limits.Setting)
		return nil, c.refusal()
	}
	c.client[key]++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.client[key]--; c.client[key] <= 0 {
			delete(c.client, key)
		}
	}, nil
}

// refusal is the answer to a call over the cap. Why ResourceExhausted: the client holds too
// many calls at once; it may retry once some of them end.
func (c *Calls) refusal() error {
	msg := fmt.Sprintf("too many calls in progress from this address (at most %d at once)", c.limits.PerClient)
	if c.limits.Setting != "" {
		msg = fmt.Sprintf("too many calls in progress from this address (at most %d at once: %s)", c.limits.PerClient, c.limits.Setting)
	}
	return status.Error(codes.ResourceExhausted, msg)
}
