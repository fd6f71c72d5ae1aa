-- Keys that sign Vagrant tokens (upstream's HMACKey). Created once, on BootstrapToken;
-- never logged, never returned by any API.
CREATE TABLE hmac_keys (
    id         text        PRIMARY KEY,
    key        bytea       NOT NULL CHECK (length(key) >= 32),
    created_at timestamptz NOT NULL DEFAULT now()
);
