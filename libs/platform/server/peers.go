package server

import (
	"net"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/netlimit"
)

// peerLimits builds the per-address caps of Options (libs/platform/netlimit, the gateway's
// too): connections closed at accept, calls refused with ResourceExhausted. A refusal is
// counted (plinth_grpc_connections_refused_total, plinth_grpc_calls_refused_total) and
// logged at INFO at most once per address a minute, so a flood does not flood the log.
func (s *Server) peerLimits() {
	s.conns = netlimit.NewConns(netlimit.ConnLimits{PerClient: s.opts.MaxConnsPerClient,
		PerClientSetting: config.EnvMaxConnsPerClient, Log: s.log})
	s.calls = netlimit.NewCalls(netlimit.CallLimits{PerClient: s.opts.MaxCallsPerClient,
		Setting: config.EnvMaxCallsPerClient, Log: s.log,
		// The refusal comes before the decode interceptor, which would take the note of an
		// undecodable request: taken here instead, so none stays behind.
		Discard: func(req any) { _ = s.codec.take(req) }})
}

// admitted is lis with its connections counted against the per-address connection cap
// when it is a TCP port. A unix socket is not: every local peer of it has the same empty
// address, so a cap per address would be one cap for all of them (the socket's 0600 mode
// is what guards it); the call cap skips its calls for the same reason.
func (s *Server) admitted(lis net.Listener) net.Listener {
	if _, ok := lis.Addr().(*net.TCPAddr); !ok {
		return lis
	}
	return s.conns.Listener(lis)
}
