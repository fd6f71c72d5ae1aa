-- WAL files archived but not yet announced on NATS (plinth.cnpgi.wal.archived). A trigger adds
-- a row in the same transaction that records the file in wal_files, so an announcement can be
-- late but never lost; the announcer turns batches of rows into one outbox event each and
-- deletes them in that event's transaction.
--
-- A bulk load that must not be announced (rebuilding the catalog from a store) sets
-- `SET LOCAL cnpgi.announce_wal = 'off'` in its transaction.

CREATE TABLE wal_archived_pending (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    store       text        NOT NULL,
    server      text        NOT NULL,
    name        text        NOT NULL,
    kind        text        NOT NULL,
    size        bigint      NOT NULL,
    stored_size bigint      NOT NULL,
    archived_at timestamptz NOT NULL
);

-- search_path is pinned to this schema: the trigger must not depend on the inserting session's.
CREATE FUNCTION wal_archived_pending_add() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF coalesce(current_setting('cnpgi.announce_wal', true), '') = 'off' THEN
        RETURN NULL;
    END IF;
    INSERT INTO wal_archived_pending (store, server, name, kind, size, stored_size, archived_at)
    VALUES (NEW.store, NEW.server, NEW.name, NEW.kind, NEW.size, NEW.stored_size, NEW.archived_at);
    RETURN NULL;
END
$$;

CREATE TRIGGER wal_files_announce AFTER INSERT ON wal_files
    FOR EACH ROW EXECUTE FUNCTION wal_archived_pending_add();
