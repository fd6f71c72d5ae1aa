package front

// MaxConcurrentStreams is the most calls one HTTP/2 connection carries at once: grpc-go
// refuses a stream over it (RST_STREAM REFUSED_STREAM) before any handler runs, and its
// clients queue their calls instead of opening it. Before, one unauthenticated connection
// held 40,000 health Watch streams (+225 MB, issue #36). A client makes one connection and
// a few long streams on it (a runner's job and log streams, a Watch), so 256 is never reached
// by one that means well.
const MaxConcurrentStreams = 256

// DefaultMaxCallsPerClient is the most calls one client address has in progress across all
// its connections (PLINTH_GATEWAY_MAX_CALLS_PER_CLIENT): without it, the per-client
// connection cap times MaxConcurrentStreams (64 × 256) would be what one address could hold.
// Two connections' worth: room for a few people behind one NAT address.
const DefaultMaxCallsPerClient = 2 * MaxConcurrentStreams
