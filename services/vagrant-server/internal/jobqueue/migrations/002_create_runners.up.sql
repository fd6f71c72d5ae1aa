-- Runners that registered through RunnerConfig. A runner's components decide which jobs it
-- may take; session lets a late "stream ended" from one replica leave a newer registration
-- (the runner reconnected elsewhere) online.
CREATE TABLE runners (
    id               text        PRIMARY KEY,
    by_id_only       boolean     NOT NULL DEFAULT false,
    runner           bytea       NOT NULL,               -- hashicorp.vagrant.Runner as registered (components included)
    component_tokens text[]      NOT NULL DEFAULT '{}',  -- "TYPE" and "TYPE:name" for each component
    online           boolean     NOT NULL DEFAULT false,
    session          bigint      NOT NULL DEFAULT 0,     -- bumped by every registration
    first_seen       timestamptz NOT NULL,
    last_seen        timestamptz NOT NULL
);
