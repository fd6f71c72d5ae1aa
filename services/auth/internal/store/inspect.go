package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// CountOutbox counts events written for subject (sent or not); for tests and diagnostics.
func (s *Store) CountOutbox(ctx context.Context, subject string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE subject = $1`, subject).Scan(&n)
	return n, err
}

// OutboxPayloads returns the payloads written for subject in the order they were written;
// for tests and diagnostics.
func (s *Store) OutboxPayloads(ctx context.Context, subject string) ([][]byte, error) {
	rows, err := s.pool.Query(ctx, `SELECT payload FROM outbox WHERE subject = $1 ORDER BY id`, subject)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[[]byte])
}
