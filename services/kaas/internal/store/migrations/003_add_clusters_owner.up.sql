-- Who created each cluster (the account of its CreateCluster call): per-user quotas count
-- a user's clusters and machines by owner_id, the user's id at auth; owner_name is the
-- username for messages. Clusters from before this migration have no recorded owner ('').
ALTER TABLE clusters
    ADD COLUMN owner_id   text NOT NULL DEFAULT '',
    ADD COLUMN owner_name text NOT NULL DEFAULT '';

CREATE INDEX clusters_owner ON clusters (owner_id);
