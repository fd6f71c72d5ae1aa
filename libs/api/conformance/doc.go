// Package conformance proves that the Go packages generated into libs/api are
// wire-identical to the upstream APIs Plinth implements (CNPG-I, Koor stats
// and auth, TopoLVM lvmd, CNCT KaaS, Vagrant server).
//
// The package has no production code: its tests load the upstream wire facts
// kept in testdata/<api>.json (services, methods, fields, enum values taken
// from the upstream descriptors; facts only, no upstream source) and compare
// them with the descriptors our generated packages register in
// protoregistry.GlobalFiles. Run them with `go test ./conformance/...` from
// libs/api. The subpackage upstreamcnpgi additionally round-trips every CNPG-I
// message through the upstream cnpg-i Go types. An API whose later upstream
// version our packages speak too (TopoLVM v0.41.0 beside the lvmd fork) is
// also checked against that version's descriptors (successor_test.go). Koor's released wire
// (data-control-center v0.6.0, api.services.auth.v1 and api.services.stats.v1), which the stats
// and auth services serve beside the seed's packages, is a sixth facts file, koor-v1.json,
// derived from upstream's sources at the tag (koorv1_test.go says how).
package conformance
