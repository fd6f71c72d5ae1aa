package wal

import (
	"context"
	"fmt"
)

// WaitReadAhead waits until the read-ahead of name for t has finished, found or not, so a
// test can change the archive after the read-ahead looked rather than racing it.
func (s *Service) WaitReadAhead(ctx context.Context, t Target, name string) error {
	s.spool.mu.Lock()
	e, ok := s.spool.entries[shippedKey(t, name)]
	s.spool.mu.Unlock()
	if !ok {
		return fmt.Errorf("no read-ahead of %s", name)
	}
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
