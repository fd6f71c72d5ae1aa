// Package upstreamtest drives the built cnpgi-plugin binary, over its unix socket, with the
// upstream CNPG-I clients (github.com/cloudnative-pg/cnpg-i v0.6.0, what CloudNativePG's
// operator and instance manager link), and a real PostgreSQL 15 archiving through the
// binary's wal-archive command.
//
// It is a package of its own because it is a test binary of its own: the upstream packages
// and our generated libs/api packages register the same protobuf names, and linking both
// into one binary panics at init. So the plugin runs as a separate process here, exactly as
// it runs beside CloudNativePG, and this package links only the upstream side.
package upstreamtest
