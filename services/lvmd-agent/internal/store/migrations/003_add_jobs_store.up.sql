-- Where each job's backup lives (never credentials), so that a listed backup can be restored
-- or deleted later (plinth.lvmd.v1.JobService RestoreBackup, DeleteBackup). Jobs recorded
-- before keep empty values: their backups are restored by path, as before.
ALTER TABLE jobs
    ADD COLUMN s3_endpoint   text    NOT NULL DEFAULT '',
    ADD COLUMN s3_bucket     text    NOT NULL DEFAULT '',
    ADD COLUMN s3_prefix     text    NOT NULL DEFAULT '',
    ADD COLUMN s3_verify_tls boolean NOT NULL DEFAULT false,
    ADD COLUMN default_store boolean NOT NULL DEFAULT false;
