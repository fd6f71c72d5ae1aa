// Package restore serves CNPG-I's RestoreJobHooks (cnpg-i v0.6.0 wire contract): a recovery
// Job's data directory from a base backup, and its recovery configuration; the rules live in
// internal/restore.
package restore
