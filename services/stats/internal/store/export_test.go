package store

import "github.com/jackc/pgx/v5/pgxpool"

// PoolOf lets the tests run the Record methods in a transaction, as the event consumer does.
func PoolOf(s *Store) *pgxpool.Pool { return s.pool }
