-- Vagrant login tokens issued to signed-in Plinth users (plinth.vagrant.v1.SessionTokenService),
-- each bound to the Plinth token it was issued for. Only ids are stored: the Vagrant token's
-- random token_id and the Plinth token's id (auth's hex SHA-256), never a token.
CREATE TABLE session_tokens (
    token_id        bytea       PRIMARY KEY,
    plinth_token_id text        NOT NULL,
    user_id         text        NOT NULL,
    username        text        NOT NULL,
    role            text        NOT NULL,
    expires_at      timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    revoked_at      timestamptz
);
CREATE INDEX session_tokens_plinth_token ON session_tokens (plinth_token_id);
CREATE INDEX session_tokens_expires ON session_tokens (expires_at);

-- Plinth tokens auth revoked (its plinth.auth.token.revoked events): a session token issued
-- while the revocation was on its way is refused by it too.
CREATE TABLE revoked_plinth_tokens (
    plinth_token_id text        PRIMARY KEY,
    reason          text        NOT NULL,
    revoked_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX revoked_plinth_tokens_revoked ON revoked_plinth_tokens (revoked_at);
