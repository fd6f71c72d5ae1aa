-- Live tokens per owner are bounded (issue #36: a viewer could mint session tokens without
-- end): a new token is refused while its owner holds the limit of unexpired, unrevoked
-- session tokens and grants. An invite's grant records when it expires, so an expired
-- invite stops counting; one recorded before this column has none and is not counted (its
-- expiry is only in the token).
ALTER TABLE token_grants ADD COLUMN expires_at timestamptz;
CREATE INDEX token_grants_owner_live ON token_grants (owner) WHERE revoked_at IS NULL;
CREATE INDEX session_tokens_user_live ON session_tokens (user_id) WHERE revoked_at IS NULL;
