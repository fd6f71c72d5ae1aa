-- Users log in with a password; usernames are unique case-insensitively.
CREATE TABLE users (
    id            uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    username      text        NOT NULL,
    password_hash text        NOT NULL, -- argon2id PHC string; parameters travel inside it
    disabled      boolean     NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_username_lower ON users (lower(username));

-- Tokens are stored only as their id: the hex SHA-256 of the bearer token.
CREATE TABLE tokens (
    id            text        PRIMARY KEY,
    user_id       uuid        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    revoked_at    timestamptz,
    revoke_reason text
);
CREATE INDEX tokens_user_live ON tokens (user_id) WHERE revoked_at IS NULL;
CREATE INDEX tokens_expires_at ON tokens (expires_at);

-- Failed-login counters per username (kind 'user', key = lower(username)) and per client
-- address (kind 'addr'); stored so a lockout survives restarts and spans replicas.
CREATE TABLE login_failures (
    kind            text        NOT NULL CHECK (kind IN ('user', 'addr')),
    key             text        NOT NULL,
    failures        integer     NOT NULL,
    last_failure_at timestamptz NOT NULL,
    PRIMARY KEY (kind, key)
);
CREATE INDEX login_failures_last ON login_failures (last_failure_at);
