-- A login token a Plinth user's session made is revoked with its owner: when auth disables or
-- deletes the user, changes their role or revokes their tokens (issue #36: streams and
-- tokens end with their user).
ALTER TABLE token_grants ADD COLUMN revoked_at timestamptz;
CREATE INDEX token_grants_user ON token_grants (user_id) WHERE user_id IS NOT NULL;
