// Package testenv gives tests real, isolated infrastructure: a fresh Postgres schema and
// a JetStream server, plus the skip-or-fail policy for when infrastructure is missing.
//
// Environment:
//
//	TEST_DATABASE_URL   Postgres to create test schemas in; unset: a private cluster
//	                    (pglocal) is started once per test binary, see Main
//	TEST_NATS_URL       NATS (JetStream) to use; unset: an embedded server per test
//	PLINTH_TEST_STRICT  "1": missing infrastructure fails tests instead of skipping them (CI)
package testenv

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
)

// Strict reports whether PLINTH_TEST_STRICT=1: CI sets it so that a test that cannot
// reach its infrastructure fails instead of silently skipping.
func Strict() bool { return os.Getenv("PLINTH_TEST_STRICT") == "1" }

// SkipOrFail stops the test because required infrastructure is unavailable: a loud skip
// normally, a failure when Strict.
func SkipOrFail(t testing.TB, reason string) {
	t.Helper()
	if Strict() {
		t.Fatalf("required test infrastructure unavailable (PLINTH_TEST_STRICT=1): %s", reason)
		return
	}
	t.Skipf("SKIPPED, infrastructure unavailable: %s (PLINTH_TEST_STRICT=1 turns this into a failure)", reason)
}

// UniqueName returns prefix_<test name>_<random>, made of [A-Za-z0-9_] only, so it is
// valid as a stream or consumer name, a subject token and a SQL identifier. Use it for
// every NATS stream and subject a test creates, since TEST_NATS_URL may be shared.
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	name := sanitize(prefix+"_"+t.Name(), 40) + "_" + randomHex(t, 4)
	return name
}

// sanitize maps s to lowercase [a-z0-9_], collapses runs of other characters into one
// underscore and truncates to max bytes.
func sanitize(s string, max int) string {
	var b strings.Builder
	underscore := false
	for _, r := range strings.ToLower(s) {
		ok := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')
		switch {
		case ok:
			b.WriteRune(r)
			underscore = false
		case !underscore:
			b.WriteByte('_')
			underscore = true
		}
	}
	out := strings.Trim(b.String(), "_")
	if len(out) > max {
		out = strings.TrimRight(out[:max], "_")
	}
	return out
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		t.Fatalf("testenv: random: %v", err)
	}
	return hex.EncodeToString(buf)
}

// SyncBuffer is a log sink that a server writes while the test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
