package store

import "context"

// CountOutbox counts events written for subject (sent or not); for tests and diagnostics.
func (s *Store) CountOutbox(ctx context.Context, subject string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE subject = $1`, subject).Scan(&n)
	return n, err
}
