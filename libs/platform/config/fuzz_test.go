package config

import (
	"strings"
	"testing"
	"time"
)

type fuzzConfig struct {
	Common
	Count   int           `env:"F_COUNT" flag:"count"`
	Big     int64         `env:"F_BIG"`
	On      bool          `env:"F_ON"`
	Wait    time.Duration `env:"F_WAIT"`
	Peers   []string      `env:"F_PEERS"`
	Secret  string        `env:"F_SECRET" secret:"true"`
	Address string        `env:"F_URL" secret:"url"`
}

// FuzzLoadAndValidate: any environment value loads or fails with an error naming its
// variable, Validate never panics, and the printed config never shows the secret.
func FuzzLoadAndValidate(f *testing.F) {
	f.Add("PLINTH_GRPC_ADDR", "unix:///x.sock", "s3cret-value")
	f.Add("F_COUNT", "12x", "s3cret-value")
	f.Add("F_WAIT", "-5h", "s3cret-value")
	f.Add("PLINTH_DATABASE_URL", "postgres://u:p@h/db", "s3cret-value")
	f.Add("F_URL", "%zz://", "s3cret-value")
	f.Fuzz(func(t *testing.T, key, value, secret string) {
		if strings.ContainsAny(key, "=\x00") || len(secret) < 8 || strings.ContainsAny(secret, "\x00") {
			return
		}
		var c fuzzConfig
		err := Load(&c, nil, []string{key + "=" + value, "F_SECRET=" + secret})
		if err != nil && !strings.Contains(err.Error(), key) {
			t.Fatalf("error %q does not name %s", err, key)
		}
		_ = c.Validate()
		if out := String(&c); strings.Contains(out, secret) && !strings.Contains(value, secret) {
			t.Fatalf("printed config shows the secret: %s", out)
		}
	})
}
