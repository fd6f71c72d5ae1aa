-- The suite's activity for the audit trail: one row per cluster or volume change stats
-- consumed, with who caused it (actor empty for the system's own work). The newest 10,000 are
-- kept (store.RecordActivity drops older rows).
CREATE TABLE activity (
	id bigserial PRIMARY KEY,
	at timestamptz NOT NULL,
	subject text NOT NULL,
	summary text NOT NULL,
	actor_id text NOT NULL DEFAULT '',
	actor_name text NOT NULL DEFAULT ''
);
CREATE INDEX activity_newest ON activity (at DESC, id DESC);
