-- Outbox events the relay could not deliver and will never be able to (NATS refused them as
-- too large, or the row is malformed). They are moved here, with the reason, so that one
-- undeliverable event never blocks the events after it. An operator can inspect, fix and
-- re-insert a row into outbox; nothing here is retried automatically.
CREATE TABLE outbox_dead_letters (
    id          bigint      PRIMARY KEY,      -- the outbox row's id
    event_id    uuid        NOT NULL,
    subject     text        NOT NULL,
    type        text        NOT NULL,
    payload     bytea       NOT NULL,
    traceparent text,
    tracestate  text,
    created_at  timestamptz NOT NULL,
    attempts    integer     NOT NULL,
    parked_at   timestamptz NOT NULL DEFAULT now(),
    reason      text        NOT NULL
);
