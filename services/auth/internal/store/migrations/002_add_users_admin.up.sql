-- Admins may call plinth.auth.v1.AdminService. The first user, created as `admin` when there
-- were no users, has always been the suite's administrator: it becomes one.
ALTER TABLE users ADD COLUMN admin boolean NOT NULL DEFAULT false;
UPDATE users SET admin = true WHERE lower(username) = 'admin';
