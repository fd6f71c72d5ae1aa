package identity

import "fmt"

// TokensQuotaSetting is the setting that configures Options.MaxTokensPerUser. A refusal
// names it, so whoever reads one knows which limit was met and what an admin would raise.
const TokensQuotaSetting = "PLINTH_AUTH_MAX_TOKENS_PER_USER"

// TokenQuota bounds the live tokens — unexpired and unrevoked — one user holds (issue #36:
// one account could mint tokens without end). Zero is no limit.
type TokenQuota struct {
	MaxPerUser int
}

// Admit refuses one more token for username, who holds live tokens, when it would take them
// beyond the limit: a *TokenQuotaError. The store calls it with the count it read under the
// user's lock, so that logins racing for the last place cannot both take it.
func (q TokenQuota) Admit(username string, live int) error {
	if q.MaxPerUser > 0 && live >= q.MaxPerUser {
		return &TokenQuotaError{Username: username, Live: live, Limit: q.MaxPerUser}
	}
	return nil
}

// TokenQuotaError is a login refused because the user already holds Limit (or more, after the
// limit was lowered) live tokens. No token is issued; signing out elsewhere, an admin's
// revoke or the tokens' expiry frees places. It maps to ResourceExhausted.
type TokenQuotaError struct {
	Username    string
	Live, Limit int
}

func (e *TokenQuotaError) Error() string {
	return fmt.Sprintf("quota: user %s holds %d live tokens, at most %d allowed (%s); sign out elsewhere or ask an admin to revoke them",
		e.Username, e.Live, e.Limit, TokensQuotaSetting)
}
