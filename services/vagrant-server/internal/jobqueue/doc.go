// Package jobqueue is vagrant-server's durable job queue: jobs are Postgres rows, claimed with
// SELECT … FOR UPDATE SKIP LOCKED, so several server replicas share one queue safely.
//
// # States
//
//	QUEUED ──Assign──▶ WAITING ──Ack──▶ RUNNING ──Complete──▶ SUCCESS
//	   ▲                  │                │
//	   └──Nack/ack timeout┘                └──Fail/heartbeat timeout/forced cancel──▶ ERROR
//
// QUEUED and WAITING jobs also end in ERROR when canceled or when they expire. Every
// transition writes a plinth.vagrant.job.state_changed event to the outbox in its own
// transaction, and a trigger NOTIFYs plinth_jobqueue at commit: in every replica one blocked
// Assign call that can take a newly queued job wakes at once (not all of them: see hub), a
// poll every Options.PollInterval is the fallback, and Watch subscribers see the change.
//
// # Deadlines
//
// Deadlines are columns, not timers, so they survive restarts and replica changes: Assign sets
// ack_deadline (Options.AckTimeout), Ack and Heartbeat set heartbeat_deadline
// (Options.HeartbeatTimeout), Queue sets expire_time from expires_in. A Reaper (one per
// replica; they share the work through SKIP LOCKED) enforces them:
//
//   - ack timeout: the job goes back to QUEUED for another runner (a plain nack; there is no
//     cancel timer left behind, unlike upstream);
//   - heartbeat timeout: the job ends in ERROR (UNAVAILABLE) and its runner is told to stop
//     (a forced cancel);
//   - expiry: a job not yet acknowledged when expire_time passes ends in ERROR
//     (DEADLINE_EXCEEDED). Assign never hands out an expired job, even before the reaper runs.
//
// # Cancellation
//
// Cancel ends a QUEUED job at once (ERROR, CANCELED). For a WAITING or RUNNING job it records
// the request (cancel_time, cancel_requested; with force the job also ends at once) and the
// runner's stream learns it through Watch, which works across replicas: the replica holding
// the runner's stream sees the NOTIFY of the replica that served CancelJob. The job then ends
// when the runner reports. Canceling a finished job changes nothing.
//
// # Components
//
// A runner registers the components it has (hashicorp.vagrant.Component: a type and a name).
// A job needs some of them, by operation (RequiredComponents):
//
//	operation                                     needs
//	noop, validate, docs, init, init_basis,        nothing
//	  init_project
//	auth                                          the component in auth.component (its type, and
//	                                              its name when given); nothing when unset
//	command                                       command.component when set (type, and name when
//	                                              given), else a COMMAND component; a command
//	                                              scoped to a target also needs a PROVIDER
//	                                              component, which drives the machine
//
// A runner can take a job when it has every needed component, or when it registered no
// components at all: such a runner makes no claims and, as upstream's runners (which send
// none) always could, takes any job. A by_id_only runner takes only jobs targeted at its id;
// any runner takes jobs targeted at its id. Assign and Validate apply the same rules.
package jobqueue
