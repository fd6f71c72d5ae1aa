package store

import (
	"context"
	"fmt"

	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// ClearUserThrottles deletes the failure counters of every (username, address) pair of the
// username, so it may log in again from everywhere at once; it returns how many went. The
// addresses' own counters stay: they were earned guessing at any user.
func (s *Store) ClearUserThrottles(ctx context.Context, username string) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM login_failures WHERE kind = 'pair' AND starts_with(key, $1)`,
		identity.NormalizeUsername(username)+" ")
	if err != nil {
		return 0, fmt.Errorf("clear the throttles of a username: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ClearAddressThrottles deletes the failure counters of the address and of every pair with it;
// it returns how many went.
func (s *Store) ClearAddressThrottles(ctx context.Context, addr string) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM login_failures
		WHERE (kind = 'addr' AND key = $1) OR (kind = 'pair' AND split_part(key, ' ', 2) = $1)`, addr)
	if err != nil {
		return 0, fmt.Errorf("clear the throttles of an address: %w", err)
	}
	return tag.RowsAffected(), nil
}
