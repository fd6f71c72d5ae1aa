package identity

import (
	"fmt"
	"regexp"
	"strings"
)

// usernamePattern is upstream's rule (koor data-control-center, validate.rules on LoginRequest).
var usernamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// Limits of upstream's LoginRequest validation.
const (
	UsernameMinLen      = 3
	UsernameMaxLen      = 24
	PasswordMinLen      = 6
	PasswordMaxLenBytes = 70
)

// ValidateUsername applies upstream's username rule: 3–24 characters of [a-zA-Z0-9-_].
func ValidateUsername(username string) error {
	if n := len(username); n < UsernameMinLen || n > UsernameMaxLen {
		return &FieldError{Field: "username", Reason: fmt.Sprintf("must be %d to %d characters", UsernameMinLen, UsernameMaxLen)}
	}
	if !usernamePattern.MatchString(username) {
		return &FieldError{Field: "username", Reason: "may contain only letters, digits, '-' and '_'"}
	}
	return nil
}

// ValidatePassword applies upstream's password rule: 6 characters to 70 bytes. The 70-byte cap
// also bounds the hashing work an attacker can ask for.
func ValidatePassword(password string) error {
	if n := len([]rune(password)); n < PasswordMinLen {
		return &FieldError{Field: "password", Reason: fmt.Sprintf("must be at least %d characters", PasswordMinLen)}
	}
	if len(password) > PasswordMaxLenBytes {
		return &FieldError{Field: "password", Reason: fmt.Sprintf("must be at most %d bytes", PasswordMaxLenBytes)}
	}
	return nil
}

// NormalizeUsername is the key usernames are unique under: case-insensitive.
func NormalizeUsername(username string) string { return strings.ToLower(username) }
