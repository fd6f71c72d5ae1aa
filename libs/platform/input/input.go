// Package input checks what clients send before any work is done with it, and quotes it
// safely: strings are valid UTF-8, contain no NUL (Postgres refuses it), and stay within a
// documented length per field; errors and logs quote at most a short prefix, so a 1 MB field
// never becomes a 1 MB error message or log line.
package input

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Common maximum lengths in bytes, for fields whose upstream API sets none.
const (
	// MaxName bounds identifiers and names (a Postgres index row holds ~2.7 kB; DNS labels
	// and most upstream names are far shorter).
	MaxName = 255
	// MaxText bounds free text such as descriptions and messages.
	MaxText = 64 << 10
	// MaxToken bounds bearer and upstream tokens, checked before any decoding.
	MaxToken = 4 << 10
	// QuoteLen is how many bytes of client input an error or log quotes.
	QuoteLen = 64
)

// Error says which field of a request is wrong and why. It is a gRPC InvalidArgument when
// returned from a handler (it implements GRPCStatus), and its message quotes only a prefix
// of what the client sent.
type Error struct {
	// Field names the field as the API spells it, e.g. "basis.name".
	Field string
	// Reason says what is wrong, e.g. "must not contain NUL".
	Reason string
}

func (e *Error) Error() string { return e.Field + ": " + e.Reason }

// GRPCStatus makes an *Error an InvalidArgument status naming the field.
func (e *Error) GRPCStatus() *status.Status { return status.New(codes.InvalidArgument, e.Error()) }

// Invalid returns an *Error for field.
func Invalid(field, format string, args ...any) error {
	return &Error{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// String checks that v is valid UTF-8 without NUL and at most max bytes long (max <= 0: no
// length limit). An empty string passes: presence is the caller's rule.
func String(field, v string, max int) error {
	if max > 0 && len(v) > max {
		return &Error{Field: field, Reason: fmt.Sprintf("is %d bytes; at most %d are allowed", len(v), max)}
	}
	if !utf8.ValidString(v) {
		return &Error{Field: field, Reason: "is not valid UTF-8"}
	}
	for i := 0; i < len(v); i++ {
		if v[i] == 0 {
			return &Error{Field: field, Reason: "must not contain NUL characters"}
		}
	}
	return nil
}

// Required is String plus non-empty.
func Required(field, v string, max int) error {
	if v == "" {
		return &Error{Field: field, Reason: "is required"}
	}
	return String(field, v, max)
}

// Strings checks every element of vs with String; field is indexed, e.g. "tags[2]".
func Strings(field string, vs []string, maxEach, maxCount int) error {
	if maxCount > 0 && len(vs) > maxCount {
		return &Error{Field: field, Reason: fmt.Sprintf("has %d entries; at most %d are allowed", len(vs), maxCount)}
	}
	for i, v := range vs {
		if err := String(field+"["+strconv.Itoa(i)+"]", v, maxEach); err != nil {
			return err
		}
	}
	return nil
}

// Quote is s quoted for an error message or a log line: at most QuoteLen bytes of it (cut on
// a rune boundary), Go-quoted so control characters are visible, with the full length noted
// when it was cut: "abc…" (1048576 bytes).
func Quote(s string) string {
	if len(s) <= QuoteLen {
		return strconv.Quote(s)
	}
	return strconv.Quote(prefix(s, QuoteLen)+"…") + " (" + strconv.Itoa(len(s)) + " bytes)"
}

// Truncate returns s cut to at most max bytes (on a rune boundary) with a marker saying how
// much was dropped, for free text kept in events and records: "…[truncated 1048000 bytes]".
// The result, marker included, is never longer than max when max >= 64.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	marker := fmt.Sprintf("…[truncated %d bytes]", len(s))
	keep := max - len(marker)
	if keep < 0 {
		keep = 0
	}
	return prefix(s, keep) + marker
}

// prefix is at most n bytes of s, not splitting a rune; invalid UTF-8 is kept as bytes.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
