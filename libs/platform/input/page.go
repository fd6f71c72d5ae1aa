package input

import (
	"encoding/base64"
	"fmt"
)

// Paging is the rule every Plinth-owned List call pages by (Google's AIP-158): page_size 0
// asks for Default, a size above Max gets Max (a client asking for more than a server gives
// is not wrong, it reads on), a negative size is InvalidArgument. Page tokens are opaque to
// clients: the base64url of the previous page's last key, which the store reads on after.
type Paging struct {
	Default, Max int
	// MaxKey bounds a token's key in bytes, checked before decoding.
	MaxKey int
	// Call names the List call in a refused token's message ("ListUsers").
	Call string
}

// Size is the page size of a request.
func (p Paging) Size(pageSize int32) (int, error) {
	switch {
	case pageSize < 0:
		return 0, &Error{Field: "page_size", Reason: fmt.Sprintf("must not be negative (0 is the default, %d; at most %d are returned)", p.Default, p.Max)}
	case pageSize == 0:
		return p.Default, nil
	case int(pageSize) > p.Max:
		return p.Max, nil
	}
	return int(pageSize), nil
}

// Key decodes a request's page_token to the key the previous page ended at; "" for the first
// page. valid (optional) checks the decoded key, so a token that was not this server's is
// refused here, not deep in a query.
func (p Paging) Key(pageToken string, valid func(key string) bool) (string, error) {
	if pageToken == "" {
		return "", nil
	}
	bad := &Error{Field: "page_token", Reason: "is not a token from a previous " + p.Call + " page; pass next_page_token as it came"}
	if len(pageToken) > base64.RawURLEncoding.EncodedLen(p.MaxKey) {
		return "", bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(pageToken)
	if err != nil || len(raw) == 0 || (valid != nil && !valid(string(raw))) {
		return "", bad
	}
	return string(raw), nil
}

// Page cuts rows — read with a limit of size+1, the extra row telling whether another page
// follows — to the page, and returns the next page's token ("" on the last page), made of
// the key of the page's last row.
func Page[T any](rows []T, size int, key func(T) string) ([]T, string) {
	if len(rows) <= size {
		return rows, ""
	}
	rows = rows[:size]
	return rows, base64.RawURLEncoding.EncodeToString([]byte(key(rows[size-1])))
}
