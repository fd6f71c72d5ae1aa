package app

import (
	"context"
	"sync"

	"google.golang.org/grpc"

	"github.com/plinth-dev/plinth/libs/platform/server"
)

// backendConns is how many connections the gateway may hold to one backend, and
// streamsPerConn the calls it puts on one before it takes the next: each backend's server
// carries at most server.DefaultMaxConcurrentStreams calls a connection, and grpc-go's
// client makes a call over that wait for a free stream rather than open a connection. On
// one connection, 256 long streams (Watch, job and log streams) of any clients would hold
// every other call to that backend back; 8 connections carry 2048 at once.
const (
	backendConns   = 8
	streamsPerConn = server.DefaultMaxConcurrentStreams
)

// connPool spreads a backend's calls over its connections: each call goes on the first
// connection with a free stream, so the others are opened (grpc-go connects lazily) only
// when the calls in progress outgrow one. A call is counted until it ends (its context).
type connPool struct {
	perConn int

	mu    sync.Mutex
	conns []*grpc.ClientConn
	calls []int // calls in progress on conns[i]
}

// newConnPool spreads calls over conns, perConn on each before the next.
func newConnPool(conns []*grpc.ClientConn, perConn int) *connPool {
	return &connPool{perConn: perConn, conns: conns, calls: make([]int, len(conns))}
}

// take picks the connection of a new call and counts it: the first with a free stream,
// else the least busy (where grpc-go queues it). release uncounts it, once.
func (p *connPool) take() (cc *grpc.ClientConn, release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := 0
	for i, n := range p.calls {
		if n < p.perConn {
			best = i
			break
		}
		if n < p.calls[best] {
			best = i
		}
	}
	p.calls[best]++
	var once sync.Once
	return p.conns[best], func() {
		once.Do(func() {
			p.mu.Lock()
			p.calls[best]--
			p.mu.Unlock()
		})
	}
}

// Invoke implements grpc.ClientConnInterface.
func (p *connPool) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	cc, release := p.take()
	defer release()
	return cc.Invoke(ctx, method, args, reply, opts...)
}

// NewStream implements grpc.ClientConnInterface. The stream is counted until its context
// ends or it ends itself (RecvMsg returns an error): grpc-go frees the stream then too.
func (p *connPool) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cc, release := p.take()
	cs, err := cc.NewStream(ctx, desc, method, opts...)
	if err != nil {
		release()
		return nil, err
	}
	stop := context.AfterFunc(cs.Context(), release)
	return &countedStream{ClientStream: cs, release: func() { stop(); release() }}, nil
}

// countedStream releases its count when it ends.
type countedStream struct {
	grpc.ClientStream
	release func()
}

func (s *countedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.release()
	}
	return err
}

var _ grpc.ClientConnInterface = (*connPool)(nil)
