-- The durable job queue: one row per job. The client-supplied part of the job is kept as the
-- protobuf bytes it arrived in (spec); everything the server decides lives in columns, so the
-- queue can be claimed, reaped and listed with plain SQL.
CREATE TABLE jobs (
    id                  text        PRIMARY KEY,            -- ULID, returned by QueueJob
    seq                 bigint      GENERATED ALWAYS AS IDENTITY UNIQUE, -- queue order (FIFO)
    spec                bytea       NOT NULL,               -- hashicorp.vagrant.Job, server fields cleared
    operation           text        NOT NULL,               -- noop, auth, docs, validate, command, init, ...
    target_runner       text        NOT NULL DEFAULT '',    -- runner id; '' means any runner
    required_components text[]      NOT NULL DEFAULT '{}',  -- component tokens a runner must have
    state               smallint    NOT NULL CHECK (state BETWEEN 1 AND 5), -- hashicorp.vagrant.Job.State
    assigned_runner     text        NOT NULL DEFAULT '',
    queue_time          timestamptz NOT NULL,
    assign_time         timestamptz,
    ack_time            timestamptz,
    complete_time       timestamptz,
    cancel_time         timestamptz,
    expire_time         timestamptz,
    ack_deadline        timestamptz,                        -- set while WAITING
    heartbeat_deadline  timestamptz,                        -- set while RUNNING
    cancel_requested    boolean     NOT NULL DEFAULT false,
    cancel_forced       boolean     NOT NULL DEFAULT false,
    error               bytea,                              -- google.rpc.Status when state is ERROR
    result              bytea                               -- hashicorp.vagrant.Job.Result
);

-- Assignment scans queued jobs in queue order; the reaper scans each kind of deadline.
CREATE INDEX jobs_queued_idx ON jobs (seq) WHERE state = 1;
CREATE INDEX jobs_ack_deadline_idx ON jobs (ack_deadline) WHERE state = 2;
CREATE INDEX jobs_heartbeat_deadline_idx ON jobs (heartbeat_deadline) WHERE state = 3;
CREATE INDEX jobs_expire_time_idx ON jobs (expire_time) WHERE state IN (1, 2) AND expire_time IS NOT NULL;
CREATE INDEX jobs_completed_idx ON jobs (complete_time DESC, seq DESC) WHERE state IN (4, 5);

-- Tells every replica listening on plinth_jobqueue that a job was queued or changed state or
-- had its cancellation requested, at commit. One channel for every schema in the database;
-- the payload names the schema so each replica ignores other deployments' jobs.
CREATE FUNCTION jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('plinth_jobqueue', json_build_object(
        'schema', TG_TABLE_SCHEMA,
        'id', NEW.id,
        'state', NEW.state,
        'target', NEW.target_runner,
        'required', NEW.required_components,
        'runner', NEW.assigned_runner,
        'cancel', NEW.cancel_requested,
        'force', NEW.cancel_forced)::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_notify_insert AFTER INSERT ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_notify();

-- Heartbeats only move a deadline: they wake nobody.
CREATE TRIGGER jobs_notify_update AFTER UPDATE ON jobs
    FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.cancel_requested IS DISTINCT FROM NEW.cancel_requested)
    EXECUTE FUNCTION jobs_notify();
