-- Failed logins are counted per (username, client address) pair and per address, no longer per
-- username: a username lock that any client could trigger locked the real user out. The old
-- per-username counters go; a pair's key is "<lowercase username> <address>".
DELETE FROM login_failures WHERE kind = 'user';
ALTER TABLE login_failures DROP CONSTRAINT login_failures_kind_check;
ALTER TABLE login_failures ADD CONSTRAINT login_failures_kind_check CHECK (kind IN ('pair', 'addr'));
