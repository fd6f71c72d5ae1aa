-- Events written by events.Outbox.Add in the same transaction as the state change they
-- describe; events.Relay publishes them to JetStream in id order and sets sent_at.
CREATE TABLE outbox (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id    uuid        NOT NULL UNIQUE,  -- ce-id and Nats-Msg-Id
    subject     text        NOT NULL,
    type        text        NOT NULL,         -- ce-type
    payload     bytea       NOT NULL,         -- protobuf
    traceparent text,
    tracestate  text,
    created_at  timestamptz NOT NULL,         -- ce-time
    sent_at     timestamptz,
    attempts    integer     NOT NULL DEFAULT 0,
    last_error  text
);

CREATE INDEX outbox_unsent_idx ON outbox (id) WHERE sent_at IS NULL;
CREATE INDEX outbox_sent_at_idx ON outbox (sent_at) WHERE sent_at IS NOT NULL;

-- Wakes the relay at commit. One channel for every schema; the payload names the
-- schema so each relay ignores other services' inserts.
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('plinth_outbox', TG_TABLE_SCHEMA);
    RETURN NULL;
END
$$;

CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
