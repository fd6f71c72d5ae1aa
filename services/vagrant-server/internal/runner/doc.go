// Package runner is vagrant-runner's logic (its config and wiring are package runnerapp): it
// registers with vagrant-server over RunnerConfig (id, by_id_only, COMMAND and PROVIDER
// components) — its id and, optionally, a reserved by-id-only id — and takes several jobs at
// once, each over its own RunnerJobStream (Request → Assignment → Ack → Terminal output and
// Heartbeats → Complete or Error), obeys JobCancel (graceful: SIGTERM then SIGKILL; forced:
// SIGKILL at once), and reconnects with exponential backoff and jitter whenever a stream
// fails. The operations themselves are in package operation, the machines in the provider
// packages.
//
// Without a login token, or while the server is away, the runner keeps running and retrying:
// /readyz stays 200 and says why it is not registered, and plinth_vagrant_runner_registered is 0.
package runner
