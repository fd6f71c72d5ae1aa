-- What each Vagrant login and invite token may do and whom it belongs to (issue #36): upstream's
-- tokens carry neither, so every holder of one was everything. Only the token's random
-- token_id is stored, never a token. A login token without a row here (made before this
-- table) is refused; session tokens keep their own table (004).
CREATE TABLE token_grants (
    token_id   bytea       PRIMARY KEY,
    invite     boolean     NOT NULL,
    role       text        NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    owner      text        NOT NULL,
    user_id    text,                  -- the Plinth user owning it, when one made it
    issued_by  bytea,                 -- token_id of the token it was made with; NULL for the first
    created_at timestamptz NOT NULL DEFAULT now()
);
