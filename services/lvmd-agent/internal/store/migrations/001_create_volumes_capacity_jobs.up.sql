-- What each node's agent last saw of its device classes, so that the events describe each
-- change once, whether the agent made it or someone ran lvm by hand (and a change made just
-- before a crash is still reported after the restart).
CREATE TABLE volumes (
    node         text   NOT NULL,
    device_class text   NOT NULL,
    name         text   NOT NULL,
    size_bytes   bigint NOT NULL,
    tags         text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (node, device_class, name)
);

CREATE TABLE capacity (
    node          text    NOT NULL,
    device_class  text    NOT NULL,
    volume_group  text    NOT NULL,
    is_default    boolean NOT NULL,
    size_bytes    bigint  NOT NULL,
    free_bytes    bigint  NOT NULL,
    volume_count  integer NOT NULL,
    PRIMARY KEY (node, device_class)
);

-- Backup and restore jobs: CreateBackup is idempotent per (node, name, volume_handle), a
-- restore per (node, volume name). Credentials and keys are never stored: a job the agent
-- was stopped under fails as retryable, and the next identical request (which carries them
-- again) restarts it.
CREATE TABLE jobs (
    id            bigserial   PRIMARY KEY,
    node          text        NOT NULL,
    kind          text        NOT NULL CHECK (kind IN ('backup', 'restore')),
    name          text        NOT NULL,
    volume_handle text        NOT NULL,
    device_class  text        NOT NULL,
    state         text        NOT NULL CHECK (state IN ('in_progress', 'complete', 'error')),
    message       text        NOT NULL DEFAULT '',
    retryable     boolean     NOT NULL DEFAULT false,
    location      text        NOT NULL,
    encrypted     boolean     NOT NULL,
    synchronous   boolean     NOT NULL DEFAULT false,
    bytes_done    bigint      NOT NULL DEFAULT 0,
    size_bytes    bigint      NOT NULL DEFAULT 0,
    owner         text        NOT NULL,
    attempts      integer     NOT NULL DEFAULT 1,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    UNIQUE (node, kind, name, volume_handle)
);

CREATE INDEX jobs_in_progress ON jobs (node) WHERE state = 'in_progress';
