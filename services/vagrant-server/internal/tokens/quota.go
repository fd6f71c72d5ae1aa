package tokens

import "fmt"

// TokensQuotaSetting is the setting that configures Quota.MaxPerOwner. A refusal names it,
// so whoever reads one knows which limit was met and what an admin would raise.
const TokensQuotaSetting = "PLINTH_VAGRANT_MAX_TOKENS_PER_USER"

// Quota bounds the live tokens one owner holds (issue #36: a viewer could mint session
// tokens without end): its session tokens and the login and invite tokens it made, together
// — unexpired (login tokens never expire), unrevoked. Zero is no limit.
type Quota struct {
	MaxPerOwner int
}

// Admit is the rule for one more token of owner (name, when set, says who that is in a
// refusal): the store calls it with the owner's live tokens, counted under the owner's lock
// in the transaction that records the new one, and records nothing when it refuses with a
// *QuotaError.
func (q Quota) Admit(owner, name string) func(live int) error {
	return func(live int) error {
		if q.MaxPerOwner > 0 && live >= q.MaxPerOwner {
			return &QuotaError{Owner: owner, Name: name, Live: live, Limit: q.MaxPerOwner}
		}
		return nil
	}
}

// QuotaError is a token refused because its owner already holds Limit live tokens (or more,
// after the limit was lowered): none was made. Expiry, signing out of the Plinth session a
// session token is bound to, or the owner's access ending frees places. ResourceExhausted.
type QuotaError struct {
	Owner, Name string
	Live, Limit int
}

func (e *QuotaError) Error() string {
	who := e.Owner
	if e.Name != "" {
		who = "user " + e.Name
	}
	return fmt.Sprintf("quota: %s holds %d live Vagrant tokens, at most %d allowed (%s); let some expire, sign out elsewhere or ask an admin to revoke them",
		who, e.Live, e.Limit, TokensQuotaSetting)
}

// UserOwner is the owner of the tokens of Plinth user id: their session tokens and the
// tokens their sessions made.
func UserOwner(id string) string { return "user:" + id }
