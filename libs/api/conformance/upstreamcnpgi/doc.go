// Package upstreamcnpgi checks that every CNPG-I message survives a round
// trip between the upstream Go types (github.com/cloudnative-pg/cnpg-i
// v0.6.0, the ones the CloudNativePG operator and instance manager use) and
// our own definitions, in both directions, losslessly.
//
// It is a separate package because it is a separate test binary. The
// upstream packages and our generated packages register descriptors with the
// same full names (cnpgi.wal.v1.WALArchiveRequest, ...) in
// protoregistry.GlobalFiles from their init functions; linking both into one
// binary makes protobuf-go panic during init, before any TestMain could set
// GOLANG_PROTOBUF_REGISTRATION_CONFLICT, and "warn" would only leave the
// registry ambiguous. So this binary links only the upstream packages, and
// our side is a dynamicpb message type built from our own descriptors, read
// from ../testdata/plinth-cnpgi-descriptors.json and registered in a private
// protoregistry.Files, never the global one. Package conformance keeps that
// file equal to the descriptors our generated packages register
// (TestCNPGIDescriptorsGolden). The generated Go code encodes and decodes
// exactly what its descriptor says, so a lossless round trip through a
// dynamicpb message of our descriptor is one through our generated type.
//
// The package holds tests only.
package upstreamcnpgi
