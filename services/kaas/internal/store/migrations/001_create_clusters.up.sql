-- Clusters, their node pools and machines. Desired state (pools' counts, target_version,
-- deleting) is written by the API; actual state (machines, version, endpoint) by the one
-- reconciler holding the cluster's lease (lease_owner until lease_expires).
CREATE TABLE clusters (
    id                bigserial PRIMARY KEY,
    uid               text NOT NULL UNIQUE,
    name              text NOT NULL UNIQUE,
    provider          text NOT NULL,
    version           text NOT NULL,
    target_version    text NOT NULL,
    status            smallint NOT NULL,
    status_message    text NOT NULL DEFAULT '',
    deleting          boolean NOT NULL DEFAULT false,
    ready_once        boolean NOT NULL DEFAULT false,
    endpoint          text NOT NULL DEFAULT '',
    attempts          integer NOT NULL DEFAULT 0,
    last_error        text NOT NULL DEFAULT '',
    -- The cluster's key material, sealed (AES-256-GCM) with the service's secret key.
    secrets           bytea NOT NULL,
    -- Bumped by every API change, so a reconciler pass that started before it knows to run
    -- again at once.
    generation        bigint NOT NULL DEFAULT 1,
    next_reconcile_at timestamptz NOT NULL DEFAULT now(),
    lease_owner       text,
    lease_expires     timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX clusters_due ON clusters (next_reconcile_at);

CREATE TABLE pools (
    id            bigserial PRIMARY KEY,
    cluster_id    bigint NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    name          text NOT NULL,
    role          smallint NOT NULL,
    instance_type text NOT NULL,
    count         integer NOT NULL CHECK (count >= 0),
    labels        jsonb NOT NULL DEFAULT '[]',
    deleting      boolean NOT NULL DEFAULT false,
    next_ordinal  integer NOT NULL DEFAULT 1,
    UNIQUE (cluster_id, name)
);

CREATE TABLE machines (
    id              bigserial PRIMARY KEY,
    cluster_id      bigint NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    pool            text NOT NULL,
    name            text NOT NULL,
    ordinal         integer NOT NULL,
    role            smallint NOT NULL,
    state           smallint NOT NULL,
    version         text NOT NULL,
    provider_id     text NOT NULL DEFAULT '',
    -- The provider's own progress with the machine (e.g. the vagrant job it follows).
    provider_state  bytea,
    hostname        text NOT NULL DEFAULT '',
    addresses       text[] NOT NULL DEFAULT '{}',
    provider_status text NOT NULL DEFAULT '',
    message         text NOT NULL DEFAULT '',
    release         boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (cluster_id, name)
);
