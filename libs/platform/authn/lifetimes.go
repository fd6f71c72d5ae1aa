package authn

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// MsgTokenEnded ends a call (a stream, typically) whose token was revoked while it ran: the
// user signed out, was disabled, had their role changed, or an admin revoked their tokens.
const MsgTokenEnded = "your token was revoked while this call ran; sign in again"

// ErrTokenEnded is the cause with which a bound call's context ends when its token ends
// (Lifetimes.End): a status error, so the server's auth interceptor (libs/platform/server)
// answers the call with it — Unauthenticated, since signing in again is what helps — rather
// than with whatever the handler made of its context ending.
var ErrTokenEnded = status.Error(codes.Unauthenticated, MsgTokenEnded)

// Lifetimes ties calls to the tokens that authenticated them, so that a stream ends when its
// token does instead of delivering data for hours after the token was revoked: a token is
// checked once, at the start of a call, and nothing would look at it again.
//
// Keys are whatever names a credential to the owner of the Lifetimes (a token id, a session
// id); the zero value is ready to use.
type Lifetimes struct {
	mu    sync.Mutex
	calls map[string]map[*boundCall]struct{}
	// ended remembers keys End was called for, for endedMemory: a call checked just before
	// its credential ended and bound just after must not escape the end.
	ended map[string]time.Time
}

// endedMemory is how long an ended key stays ended for calls bound later: far longer than a
// credential check takes, so a check that raced the end cannot bind after it is forgotten.
const endedMemory = time.Minute

type boundCall struct{ cancel context.CancelCauseFunc }

// Bind returns ctx ending, with ErrTokenEnded as its cause, when End(key) is called — at
// once when End(key) was called within the last minute. The binding is forgotten when ctx
// ends, however it ends (gRPC ends a call's context when the call finishes), so nothing
// needs to unbind it.
func (l *Lifetimes) Bind(ctx context.Context, key string) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	c := &boundCall{cancel: cancel}
	l.mu.Lock()
	if at, ok := l.ended[key]; ok && time.Since(at) < endedMemory {
		l.mu.Unlock()
		cancel(ErrTokenEnded)
		return ctx
	}
	if l.calls == nil {
		l.calls = make(map[string]map[*boundCall]struct{})
	}
	set := l.calls[key]
	if set == nil {
		set = make(map[*boundCall]struct{})
		l.calls[key] = set
	}
	set[c] = struct{}{}
	l.mu.Unlock()
	context.AfterFunc(ctx, func() { l.forget(key, c) })
	return ctx
}

// End ends every call bound to key, and any bound to it within the next minute, and returns
// how many there were.
func (l *Lifetimes) End(key string) int {
	now := time.Now()
	l.mu.Lock()
	set := l.calls[key]
	delete(l.calls, key)
	if l.ended == nil {
		l.ended = make(map[string]time.Time)
	}
	for k, at := range l.ended { // revocations are rare: a sweep per end costs nothing
		if now.Sub(at) >= endedMemory {
			delete(l.ended, k)
		}
	}
	l.ended[key] = now
	l.mu.Unlock()
	for c := range set {
		c.cancel(ErrTokenEnded)
	}
	return len(set)
}

// Len is the number of calls bound now (for metrics and tests).
func (l *Lifetimes) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, set := range l.calls {
		n += len(set)
	}
	return n
}

func (l *Lifetimes) forget(key string, c *boundCall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if set := l.calls[key]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(l.calls, key)
		}
	}
}
