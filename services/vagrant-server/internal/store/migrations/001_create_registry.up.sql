-- The registry: bases, projects, targets and boxes. resource_id is the ULID the server
-- assigns on create; it never changes. Nested messages the server does not interpret
-- (configurations, data sources, target records, box metadata) are stored as protobuf
-- bytes (proto.Marshal), so their google.protobuf.Any payloads come back byte for byte.
-- Custom metadata (sdk.Args.MetadataSet) is a flat string map: jsonb, so it can be queried.

CREATE TABLE basis (
    resource_id    text        PRIMARY KEY,
    name           text        NOT NULL CHECK (name <> ''),
    path           text        NOT NULL CHECK (path <> ''),
    metadata       jsonb,
    configuration  bytea,      -- hashicorp.vagrant.Vagrantfile
    remote_enabled boolean     NOT NULL DEFAULT false,
    data_source    bytea,      -- hashicorp.vagrant.Job.DataSource
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT basis_name_key UNIQUE (name),
    CONSTRAINT basis_path_key UNIQUE (path)
);

CREATE TABLE project (
    resource_id    text        PRIMARY KEY,
    basis_id       text        NOT NULL REFERENCES basis (resource_id) ON DELETE CASCADE,
    name           text        NOT NULL CHECK (name <> ''),
    path           text        NOT NULL CHECK (path <> ''),
    metadata       jsonb,
    configuration  bytea,      -- hashicorp.vagrant.Vagrantfile
    remote_enabled boolean     NOT NULL DEFAULT false,
    data_source    bytea,      -- hashicorp.vagrant.Job.DataSource
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT project_name_key UNIQUE (basis_id, name),
    CONSTRAINT project_path_key UNIQUE (basis_id, path)
);

CREATE TABLE target (
    resource_id   text        PRIMARY KEY,
    project_id    text        NOT NULL REFERENCES project (resource_id) ON DELETE CASCADE,
    parent_id     text        REFERENCES target (resource_id) ON DELETE SET NULL,
    name          text        NOT NULL CHECK (name <> ''),
    uuid          text        CHECK (uuid <> ''), -- optional; NULL when unset
    provider      text        NOT NULL DEFAULT '',
    state         integer     NOT NULL DEFAULT 0,  -- hashicorp.vagrant.Operation.PhysicalState
    metadata      jsonb,
    datadir       bytea,      -- hashicorp.vagrant.sdk.Args.DataDir.Target
    configuration bytea,      -- hashicorp.vagrant.sdk.Args.ConfigData
    record        bytea,      -- google.protobuf.Any (usually a Target.Machine)
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT target_name_key UNIQUE (project_id, name),
    CONSTRAINT target_uuid_key UNIQUE (uuid),
    CONSTRAINT target_not_own_parent CHECK (parent_id <> resource_id)
);
-- FindTarget looks targets up by a prefix of their uuid (uuid LIKE 'prefix%').
CREATE INDEX target_uuid_prefix ON target (uuid text_pattern_ops) WHERE uuid IS NOT NULL;
CREATE INDEX target_parent ON target (parent_id) WHERE parent_id IS NOT NULL;

CREATE TABLE box (
    resource_id  text        PRIMARY KEY,
    name         text        NOT NULL CHECK (name <> ''),
    version      text        NOT NULL CHECK (version <> ''),
    provider     text        NOT NULL CHECK (provider <> ''),
    directory    text        NOT NULL CHECK (directory <> ''),
    metadata     bytea,      -- google.protobuf.Struct (the box's metadata.json)
    metadata_url text        NOT NULL DEFAULT '',
    last_update  timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT box_name_version_provider_key UNIQUE (name, version, provider),
    CONSTRAINT box_directory_key UNIQUE (directory)
);
