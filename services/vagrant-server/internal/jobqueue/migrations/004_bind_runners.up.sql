-- A runner id belongs to whoever first registered it (issue #36): without this a second
-- user registering an existing id took the jobs meant for the first, kaas's reserved id
-- among them. registrant names the credential (a login token, or a Plinth user for session
-- tokens, which are reissued hourly); NULL for a runner registered before the column
-- existed, which its next registration claims.
ALTER TABLE runners ADD COLUMN registrant text;
