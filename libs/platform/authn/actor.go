package authn

import (
	"context"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/metadata"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
)

// maxActorField bounds what Actor copies from request metadata: a username is at most 24
// characters and an id a UUID, so anything longer is not the gateway's and is left out.
const maxActorField = 64

// Actor is who caused what the call in ctx does, for an event's actor field: the account the
// Verifier put into ctx when the service checks Plinth tokens itself, else the account the
// gateway names in the incoming metadata (plinth-account-id, plinth-account-name), else nil
// (the system's own work: a reconciler, a schedule, a caller that did not come through the
// gateway).
//
// The headers are believed only because the gateway sets them after verifying the caller's
// token and drops any copy a client sent; a service reading them must be reachable only
// through the gateway or by trusted local clients (lvmd-agent's socket, cnpgi-plugin's mTLS),
// which can at worst put a wrong name into an audit event, never gain a right.
func Actor(ctx context.Context) *eventsv1.Actor {
	if a, ok := AccountFrom(ctx); ok && a.ID != "" {
		return &eventsv1.Actor{UserId: a.ID, Username: a.Name}
	}
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return nil
	}
	id := single(md.Get(AccountHeader))
	if id == "" {
		return nil
	}
	return &eventsv1.Actor{UserId: id, Username: single(md.Get(NameHeader))}
}

// single returns the one value of a header the gateway sets once, or "" when it is missing,
// repeated (not the gateway's) or not a plain short string.
func single(values []string) string {
	if len(values) != 1 {
		return ""
	}
	v := strings.TrimSpace(values[0])
	if len(v) > maxActorField || !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return ""
	}
	return v
}
