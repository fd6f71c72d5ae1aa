// Package joboutput keeps the terminal output of vagrant jobs durable, so GetJobStream and
// GetLogStream serve it from any replica and after restarts (upstream held it in memory).
//
// A runner's Terminal events are written by the replica holding its job stream, in batches
// (Writer), as rows numbered 1, 2, … per job. One job has one writer at a time — output is
// only accepted after the runner acknowledged the job, and a running job never returns to
// the queue — and each batch commits before the next starts, so a reader that remembers the
// last number it saw (ReadOutput after it) never misses or repeats an event.
//
// Readers learn of new output from Postgres: every insert NOTIFYs plinth_joboutput with the
// jobs it wrote, and a Listener per replica routes that to Subscriptions. Readers also poll,
// since a notification sent while the listener reconnects is lost.
//
// Output of a job belongs to the scope (basis, project, target) its job names; GetLogStream
// reads the output of every job in a scope (Store.LogBacklog, Store.LogSince).
package joboutput
