-- A notification names the job (a server-made ULID) and its state, never client text: a
-- runner id or component name of any length would otherwise reach pg_notify, whose payload
-- is limited to 8000 bytes (the change itself would fail), and every listener on the
-- database's channel would read it. Whom a queued job is for travels as md5 digests, which is
-- all the replicas need to decide whom to wake: route is "<digest of the target runner, or
-- empty>;<digests of the required component tokens, comma-separated>", written by Queue (a
-- job needs at most two components). The payload is space-separated words, cheaper to build
-- and to read than JSON:
--   <schema> <id> <state> <cancel requested 0|1><cancel forced 0|1> <assigned runner digest|-> <route|->
ALTER TABLE jobs ADD COLUMN route text NOT NULL DEFAULT '';

UPDATE jobs SET route = CASE WHEN target_runner = '' THEN '' ELSE md5(target_runner) END || ';' ||
    array_to_string(ARRAY(SELECT md5(c) FROM unnest(required_components) AS c ORDER BY 1), ',')
WHERE state IN (1, 2);

CREATE OR REPLACE FUNCTION jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('plinth_jobqueue', TG_TABLE_SCHEMA || ' ' || NEW.id || ' ' || NEW.state || ' ' ||
        NEW.cancel_requested::int || NEW.cancel_forced::int || ' ' ||
        CASE WHEN NEW.assigned_runner = '' THEN '-' ELSE md5(NEW.assigned_runner) END || ' ' ||
        CASE WHEN NEW.state = 1 AND NEW.route <> '' THEN NEW.route ELSE '-' END);
    RETURN NULL;
END
$$;

-- The replica holding a runner's RunnerConfig stream refreshes last_seen; any replica's
-- reaper marks runners it stopped refreshing offline (that replica died with the stream).
CREATE INDEX runners_online_last_seen_idx ON runners (last_seen) WHERE online;
