// Package operator serves the CNPG-I services the CloudNativePG operator calls (cnpg-i
// v0.6.0 wire contract): Operator (validate, mutate, status), OperatorLifecycle (the sidecar
// in Pods and recovery Jobs) and ReconcilerHooks; the rules live in internal/operator/....
package operator
