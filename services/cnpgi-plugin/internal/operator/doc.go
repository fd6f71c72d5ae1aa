// Package operator is the plugin's CNPG-I operator role: the services the CloudNativePG
// operator calls (cnpg-i v0.6.0 wire contract), one file each — Identity (identity_server.go:
// metadata, the capabilities of every service the binary registers, Probe), Operator
// (operator_server.go), OperatorLifecycle (lifecycle_server.go) and ReconcilerHooks
// (reconciler_server.go) — and the rules behind Operator: which parameters a Cluster may give
// the plugin (validate.go), which defaults it gets (mutate.go), and the recovery window the
// plugin reports in the Cluster's status (status.go). The sidecar injection into Pods and
// Jobs is lifecycle/, the requeue gate reconciler/, both over jsonpatch/. It imports no other
// role's package.
package operator
