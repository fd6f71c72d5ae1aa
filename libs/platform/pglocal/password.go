package pglocal

import (
	"bufio"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Loopback is open to every account on the machine, so a cluster's roles have passwords:
// generated here, kept in pgpass files readable by their owner only, and given to PostgreSQL
// only as SCRAM-SHA-256 verifiers, so a password never appears in a statement the server
// could log (log_statement) or in a process's arguments.

// scramIterations is PostgreSQL's own default (scram_iterations).
const scramIterations = 4096

// NewPassword returns 32 random bytes, hex-encoded: nothing a pgpass line or a URL escapes.
func NewPassword() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate a password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// SCRAMVerifier returns password's SCRAM-SHA-256 verifier in the form PostgreSQL stores in
// pg_authid and accepts in ALTER ROLE … PASSWORD (RFC 5802 keys, a random 16-byte salt).
// Passwords from NewPassword are ASCII, so SASLprep leaves them unchanged.
func SCRAMVerifier(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("generate a salt: %w", err)
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, scramIterations, sha256.Size)
	if err != nil {
		return "", fmt.Errorf("derive the SCRAM key: %w", err)
	}
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	stored := sha256.Sum256(mac(salted, "Client Key"))
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", scramIterations, b64(salt), b64(stored[:]),
		b64(mac(salted, "Server Key"))), nil
}

// WritePassFile replaces path with a pgpass file (mode 0600) holding password for user on any
// host, port and database: the file is handed only to clients of the one server it is for.
// The replacement is atomic, so a client never reads half a file.
func WritePassFile(path, user, password string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".pgpass-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() { _ = os.Remove(f.Name()) }() // after a successful rename, nothing to remove
	_, werr := fmt.Fprintf(f, "*:*:*:%s:%s\n", escapePass(user), escapePass(password))
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadPassFile returns user's password from a pgpass file written by WritePassFile;
// os.ErrNotExist when there is no file.
func ReadPassFile(path, user string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	prefix := "*:*:*:" + escapePass(user) + ":"
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok && rest != "" {
			return strings.NewReplacer(`\:`, ":", `\\`, `\`).Replace(rest), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return "", fmt.Errorf("%s holds no password for %s: delete it to have a new one made", path, user)
}

// escapePass escapes the two characters pgpass fields give meaning to.
func escapePass(s string) string {
	return strings.NewReplacer(`\`, `\\`, ":", `\:`).Replace(s)
}
