-- Whose credential queued each job (issue #36: 100 jobs were queued in 33 s by one account):
-- the owner of the login or session token QueueJob was called with (tokens.Caller.Owner),
-- counted for the queue's per-owner limit on unfinished jobs. NULL for a job queued before
-- owners were recorded, which counts against nobody.
ALTER TABLE jobs ADD COLUMN owner text;
CREATE INDEX jobs_owner_unfinished_idx ON jobs (owner) WHERE state IN (1, 2, 3);
