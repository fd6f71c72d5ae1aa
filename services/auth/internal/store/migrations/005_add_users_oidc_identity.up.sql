-- People may sign in through an OpenID Connect provider: such a user is the provider's
-- (provider, subject) pair, never a username (a local user called like the provider's
-- preferred_username is another person). Local users have neither; an OIDC user has both and
-- an empty password hash, which no password matches (Login refuses such a user before hashing).
ALTER TABLE users ADD COLUMN oidc_provider text, ADD COLUMN oidc_subject text;
ALTER TABLE users ADD CONSTRAINT users_oidc_pair CHECK ((oidc_provider IS NULL) = (oidc_subject IS NULL));
CREATE UNIQUE INDEX users_oidc_identity ON users (oidc_provider, oidc_subject) WHERE oidc_provider IS NOT NULL;

-- A sign-in begun at a provider and not yet completed: the state the browser carries is the
-- key (only its SHA-256 is stored, like a token's), single use (CompleteSignIn deletes the
-- row it takes) and expiring. Stored here, not in a process, so any replica completes it.
CREATE TABLE oidc_states (
    id            text        PRIMARY KEY, -- hex SHA-256 of the state
    provider      text        NOT NULL,
    nonce         text        NOT NULL,
    code_verifier text        NOT NULL,
    redirect_uri  text        NOT NULL,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL
);
CREATE INDEX oidc_states_expires_at ON oidc_states (expires_at);
