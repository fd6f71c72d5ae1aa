package grpc

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// Protocol headers every call but GetVersionInfo carries: "<minimum>,<current>".
const (
	headerAPIProtocol        = "client-api-protocol"
	headerEntrypointProtocol = "client-entrypoint-protocol"
)

// Upstream's negotiation errors (internal/protocolversion/negotiate.go), word for word:
// clients may show them to users.
const (
	errClientOutdated = "The client's supported protocol version is not understood by the server.\n\n" +
		"This means that the client is too outdated for the server. To solve this,\n" +
		"the client must be upgraded to a newer version."
	errServerOutdated = "The server's minimum advertised protocol version is too outdated for the client.\n\n" +
		"This means that the client being run is newer than the server and the\n" +
		"API has changed significantly enough that this client can no longer communicate\n" +
		"to this server.\n\n" +
		"To solve this, either downgrade the client or upgrade the server. Please read\n" +
		"any upgrade guides prior to doing this to ensure a safe transition."
)

// checkProtocol checks that a protocol version can be negotiated for a call to method (its short name) from
// the client's header. Every failure is InvalidArgument, as upstream's version interceptor
// answers: a missing or malformed header, and a client range that does not overlap ours.
func checkProtocol(ctx context.Context, method string) error {
	header, server := headerAPIProtocol, apiProtocol
	if strings.HasPrefix(method, "Entrypoint") {
		header, server = headerEntrypointProtocol, entrypointProtocol
	}
	vs := metadata.ValueFromIncomingContext(ctx, header)
	if len(vs) != 1 {
		return &protocolError{msg: "required header " + header + " is not set"}
	}
	client, err := parseProtocol(vs[0])
	if err != nil {
		return &protocolError{msg: fmt.Sprintf("header %q: %s", header, err)}
	}
	if _, reason := negotiate(client, server); reason != "" {
		return &protocolError{msg: fmt.Sprintf("header %q: %s", header, reason)}
	}
	return nil
}

// parseProtocol reads "<minimum>,<current>".
func parseProtocol(v string) (*vagrant.VersionInfo_ProtocolVersion, error) {
	minS, curS, ok := strings.Cut(v, ",")
	if !ok {
		return nil, fmt.Errorf("protocol version header must be formatted <min>,<current>")
	}
	minV, err1 := strconv.ParseUint(strings.TrimSpace(minS), 10, 32)
	curV, err2 := strconv.ParseUint(strings.TrimSpace(curS), 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("protocol version header must be formatted <min>,<current>")
	}
	return &vagrant.VersionInfo_ProtocolVersion{Minimum: uint32(minV), Current: uint32(curV)}, nil
}

// negotiate picks the highest version both sides speak, or says which side is too old.
func negotiate(client, server *vagrant.VersionInfo_ProtocolVersion) (uint32, string) {
	switch {
	case client.Current < server.Minimum:
		return 0, errClientOutdated
	case server.Current < client.Minimum:
		return 0, errServerOutdated
	}
	return min(client.Current, server.Current), ""
}
