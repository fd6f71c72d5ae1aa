package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// CreateFirstKey stores key id only when no key exists yet, and reports whether it did. The
// table lock makes concurrent bootstraps (on any replica) serialize: exactly one wins.
func (s *Store) CreateFirstKey(ctx context.Context, id string, key []byte) (bool, error) {
	created := false
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE hmac_keys IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return fmt.Errorf("lock hmac_keys: %w", err)
		}
		tag, err := tx.Exec(ctx, `INSERT INTO hmac_keys (id, key) SELECT $1, $2
			WHERE NOT EXISTS (SELECT 1 FROM hmac_keys)`, id, key)
		if err != nil {
			return fmt.Errorf("insert hmac key: %w", err)
		}
		created = tag.RowsAffected() == 1
		return nil
	})
	return created, err
}

// Key returns key id, or tokens.ErrUnknownKey.
func (s *Store) Key(ctx context.Context, id string) ([]byte, error) {
	var key []byte
	err := s.pool.QueryRow(ctx, `SELECT key FROM hmac_keys WHERE id = $1`, id).Scan(&key)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, tokens.ErrUnknownKey
	}
	if err != nil {
		return nil, fmt.Errorf("select hmac key: %w", err)
	}
	return key, nil
}
