-- When a job's latest attempt started (a restarted job starts again), for the jobs API's
-- newest-first list; the list pages by (started_at, id) of this node.
ALTER TABLE jobs ADD COLUMN started_at timestamptz;
UPDATE jobs SET started_at = updated_at WHERE started_at IS NULL;
ALTER TABLE jobs ALTER COLUMN started_at SET DEFAULT now(), ALTER COLUMN started_at SET NOT NULL;
CREATE INDEX jobs_node_started ON jobs (node, started_at DESC, id DESC);
