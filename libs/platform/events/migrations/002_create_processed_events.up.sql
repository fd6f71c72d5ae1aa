-- Event ids each durable consumer has handled, written in the handler's transaction:
-- a redelivered event finds its row and is acknowledged without running again.
CREATE TABLE processed_events (
    consumer     text        NOT NULL,
    event_id     text        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);

CREATE INDEX processed_events_processed_at_idx ON processed_events (processed_at);
