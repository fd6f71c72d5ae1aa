package routes

import "time"

// The connection limits and timeouts of both gateways: the Go gateway's defaults (each but
// the header limits configurable, see its README) and what the generated Envoy configs carry.
const (
	// IdleTimeout closes a connection, HTTP/1.1 or HTTP/2, that carries no request for this long.
	IdleTimeout = 2 * time.Minute
	// RequestHeadersTimeout bounds how long a client may take to send a request's headers.
	RequestHeadersTimeout = 10 * time.Second
	// MaxRequestHeaderBytes bounds a request's headers (a token, a trace context and a
	// browser's usual headers fit many times over): they are read before anything can refuse them.
	MaxRequestHeaderBytes = 32 << 10
	// MaxConns is the most connections a gateway holds at once. An idle connection costs the
	// Go gateway 23 KiB (HTTP/1.1) to 55 KiB (HTTP/2) of heap and stacks
	// (front.BenchmarkIdleConnections): 2048 of them stay under half its 256 MiB soft memory
	// limit, leaving the rest to the calls they carry.
	MaxConns = 2048
	// MaxConnsPerClient is the most connections one client address holds at once. A browser
	// opens at most 6 per host over HTTP/1.1 (the console), a gRPC client one; 64 leaves room
	// for a few people behind one NAT address while 32 addresses are needed to fill MaxConns.
	MaxConnsPerClient = 64
)
