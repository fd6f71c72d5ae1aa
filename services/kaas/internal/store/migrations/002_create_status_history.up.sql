-- Each cluster's status changes, as its ClusterStatusChanged events told them, for the
-- console's timeline (plinth.kaas.v1.ClusterInfoService). Written in the transaction of the
-- change; the newest 100 per cluster are kept.
CREATE TABLE status_history (
    id             bigserial PRIMARY KEY,
    cluster_id     bigint NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    at             timestamptz NOT NULL DEFAULT now(),
    status         smallint NOT NULL,
    message        text NOT NULL,
    actor_username text NOT NULL DEFAULT ''
);

CREATE INDEX status_history_cluster ON status_history (cluster_id, id);
