-- Every user has one role (libs/platform/authz): viewer (read-only calls), operator (everything
-- but user administration) or admin. Existing admins become admins and everyone else an
-- operator, so nobody loses a call they could make before. The admin flag becomes a column
-- computed from the role, so the two can never disagree.
ALTER TABLE users ADD COLUMN role text NOT NULL DEFAULT 'operator'
    CHECK (role IN ('viewer', 'operator', 'admin'));
UPDATE users SET role = 'admin' WHERE admin;
ALTER TABLE users DROP COLUMN admin;
ALTER TABLE users ADD COLUMN admin boolean GENERATED ALWAYS AS (role = 'admin') STORED;
CREATE INDEX users_enabled_admins ON users (id) WHERE role = 'admin' AND NOT disabled;
