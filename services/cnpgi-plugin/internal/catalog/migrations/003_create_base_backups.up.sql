-- The base-backup catalog: every physical backup the plugin took or found in a store (by
-- `catalog rebuild`), per object store and server. The store's backup.info is the source of
-- truth; these rows make listing, retention and metrics cheap and keep the history of failed
-- backups, whose objects retention removes.

CREATE TABLE base_backups (
    store             text        NOT NULL,
    server            text        NOT NULL,
    backup_id         text        NOT NULL,              -- barman's YYYYMMDDTHHMMSS
    backup_name       text        NOT NULL DEFAULT '',   -- the Backup object's name
    status            text        NOT NULL CHECK (status IN ('STARTED', 'DONE', 'FAILED')),
    timeline          bigint      NOT NULL DEFAULT 0 CHECK (timeline >= 0),
    begin_wal         text        NOT NULL DEFAULT '',
    end_wal           text        NOT NULL DEFAULT '',
    begin_lsn         pg_lsn      NULL,
    end_lsn           pg_lsn      NULL,
    begin_time        timestamptz NOT NULL,
    end_time          timestamptz NULL,
    size              bigint      NOT NULL DEFAULT 0 CHECK (size >= 0),        -- tar bytes before compression
    stored_size       bigint      NOT NULL DEFAULT 0 CHECK (stored_size >= 0), -- what the store holds
    compression       text        NOT NULL DEFAULT '',
    system_identifier numeric(20) NULL,
    pg_version        integer     NOT NULL DEFAULT 0,
    instance          text        NOT NULL DEFAULT '',
    error             text        NOT NULL DEFAULT '',
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (store, server, backup_id)
);

-- Retention and recovery pick backups of a server by end time.
CREATE INDEX base_backups_by_end ON base_backups (store, server, end_time);
