-- The suite's node inventory, built from lvmd-agent's and kaas's events (each applied once:
-- processed_events, from the events library, records which). Times are the events' ce-time.

-- Nodes an lvmd-agent runs on. heartbeat_at is NULL until the first heartbeat (a capacity
-- event may come first).
CREATE TABLE storage_nodes (
    name                       text        PRIMARY KEY,
    first_seen                 timestamptz NOT NULL,
    heartbeat_at               timestamptz,
    heartbeat_interval_seconds integer     NOT NULL DEFAULT 0,
    heartbeats                 bigint      NOT NULL DEFAULT 0,
    addresses                  text[]      NOT NULL DEFAULT '{}',
    agent_version              text        NOT NULL DEFAULT ''
);

-- Each node's device classes and their volume groups' space; observed_at keeps the newest.
CREATE TABLE device_classes (
    node         text        NOT NULL REFERENCES storage_nodes (name) ON DELETE CASCADE,
    name         text        NOT NULL,
    volume_group text        NOT NULL,
    is_default   boolean     NOT NULL,
    size_bytes   bigint      NOT NULL,
    free_bytes   bigint      NOT NULL,
    volumes      integer     NOT NULL,
    observed_at  timestamptz NOT NULL,
    PRIMARY KEY (node, name)
);

-- kaas's machines; role and state are plinth.events.v1.MachineRole/MachineState numbers.
CREATE TABLE machines (
    name            text        PRIMARY KEY,
    cluster         text        NOT NULL,
    pool            text        NOT NULL,
    role            smallint    NOT NULL,
    state           smallint    NOT NULL,
    addresses       text[]      NOT NULL DEFAULT '{}',
    provider        text        NOT NULL,
    provider_id     text        NOT NULL,
    provider_status text        NOT NULL,
    message         text        NOT NULL,
    first_seen      timestamptz NOT NULL,
    changed_at      timestamptz NOT NULL
);
CREATE INDEX machines_cluster ON machines (cluster);

-- The cluster's state over time (bounded by retention and a row cap): a row whenever the state
-- changes and at least every minute otherwise. Stability and the usage trend are read from it.
CREATE TABLE usage_samples (
    id          bigserial   PRIMARY KEY,
    at          timestamptz NOT NULL,
    health      text        NOT NULL,
    checks      integer     NOT NULL,
    used_bytes  bigint      NOT NULL,
    total_bytes bigint      NOT NULL,
    osds_up     integer     NOT NULL,
    osds_in     integer     NOT NULL,
    nodes_ready integer     NOT NULL,
    nodes_total integer     NOT NULL
);
CREATE INDEX usage_samples_at ON usage_samples (at);
