-- The WAL catalog: what this plugin archived, per object store and server. The object store
-- is the source of truth for the bytes; these rows make Status, idempotent re-archiving and
-- restores fast, and record the retention horizon (first required WAL).

CREATE TABLE wal_files (
    store             text        NOT NULL,
    server            text        NOT NULL,
    name              text        NOT NULL,              -- 000000010000000000000003, 00000002.history, ...
    kind              text        NOT NULL CHECK (kind IN ('segment', 'history', 'backup', 'partial')),
    timeline          bigint      NOT NULL CHECK (timeline >= 0),
    size              bigint      NOT NULL CHECK (size >= 0), -- bytes before compression
    stored_size       bigint      NOT NULL CHECK (stored_size >= 0),
    compression       text        NOT NULL,
    sha256            bytea       NOT NULL CHECK (length(sha256) = 32), -- of the uncompressed bytes
    system_identifier numeric(20) NULL,                  -- from the segment's long page header
    object_key        text        NOT NULL,
    archived_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (store, server, name)
);

-- Status reads the first and last segment of a server; names sort in WAL order.
CREATE INDEX wal_files_segments ON wal_files (store, server, name) WHERE kind = 'segment';

CREATE TABLE first_required_wal (
    store      text        NOT NULL,
    server     text        NOT NULL,
    name       text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (store, server)
);
