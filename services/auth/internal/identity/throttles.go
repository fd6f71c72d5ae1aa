package identity

import (
	"context"
	"net/netip"
)

// UnlockUser clears the login throttles of every (username, address) pair of username, so it
// can log in again at once from any address; the operator's way out (`auth users unlock`). It
// works for names that do not exist too (guessed names are throttled as well) and returns how
// many counters went. Addresses stay throttled: clear them with UnlockAddress.
func (s *Service) UnlockUser(ctx context.Context, username string) (int64, error) {
	if err := ValidateUsername(username); err != nil {
		return 0, err
	}
	return s.store.ClearUserThrottles(ctx, username)
}

// UnlockAddress clears the login throttles of a client address and of every pair with it
// (`auth unlock-address`); it returns how many counters went.
func (s *Service) UnlockAddress(ctx context.Context, address string) (int64, error) {
	a, err := netip.ParseAddr(address)
	if err != nil {
		return 0, &FieldError{Field: "address", Reason: "must be an IP address such as 192.0.2.7 or 2001:db8::7"}
	}
	// The form the gRPC layer records: IPv4-mapped IPv6 unmapped, canonical text.
	return s.store.ClearAddressThrottles(ctx, a.Unmap().String())
}
