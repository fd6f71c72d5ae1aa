-- Job output (GetJobStream, GetLogStream). The queue's jobs table belongs to the jobqueue
-- migration set, which store.Open applies before this service's own set; output rows go with
-- their job (ON DELETE CASCADE), so PruneOldJobs removes them too. Nothing here references
-- the registry: a deleted target's job logs stay readable by job.
CREATE TABLE job_output (
    id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- write order, across jobs
    job_id text        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq    bigint      NOT NULL CHECK (seq > 0),    -- 1, 2, … per job, in the runner's order
    time   timestamptz NOT NULL,                    -- the event's timestamp (the runner's clock)
    event  bytea       NOT NULL,                    -- hashicorp.vagrant.GetJobStreamResponse.Terminal.Event
    -- The writing transaction: a log reader asks for "everything committed since" with
    -- xid >= the xmin of its previous snapshot, which no in-flight writer can be below.
    xid    xid8        NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT job_output_seq_key UNIQUE (job_id, seq)
);
CREATE INDEX job_output_xid_idx ON job_output (xid);

-- The scope of each job that wrote output, resolved to resource ids when it started running,
-- and the runner that ran it (the log stream's instance_id).
CREATE TABLE job_scope (
    job_id     text PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    runner_id  text NOT NULL,
    basis_id   text,
    project_id text,
    target_id  text
);
CREATE INDEX job_scope_basis_idx ON job_scope (basis_id) WHERE basis_id IS NOT NULL;
CREATE INDEX job_scope_project_idx ON job_scope (project_id) WHERE project_id IS NOT NULL;
CREATE INDEX job_scope_target_idx ON job_scope (target_id) WHERE target_id IS NOT NULL;

-- Tells every replica listening on plinth_joboutput which jobs have new output, at commit.
-- One channel for every schema in the database; the payload names the schema.
CREATE FUNCTION job_output_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('plinth_joboutput', json_build_object(
        'schema', TG_TABLE_SCHEMA,
        'jobs', (SELECT array_agg(DISTINCT job_id) FROM new_rows))::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER job_output_notify AFTER INSERT ON job_output
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION job_output_notify();
