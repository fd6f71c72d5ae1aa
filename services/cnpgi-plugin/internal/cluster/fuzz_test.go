package cluster_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
)

// FuzzParse feeds cluster definitions (the JSON CloudNativePG sends with every call) to
// Parse and to everything a handler then asks of the result: never a panic, and every
// error a short message whatever the input.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"cnpgi.plinth.dev","parameters":{"serverName":"pg","objectStore":"s3"}}]}}`,
		`{"metadata":{"name":"pg","annotations":{"cnpg.io/skipEmptyWalArchiveCheck":"enabled"}},"spec":{"plugins":[{"name":"cnpgi.plinth.dev","enabled":false}]}}`,
		`{"metadata":{"name":"new"},"spec":{"bootstrap":{"recovery":{"source":"old"}},"externalClusters":[{"name":"old","plugin":{"name":"cnpgi.plinth.dev","parameters":{"serverName":"old"}}}]}}`,
		`{"metadata":{"name":"r"},"spec":{"replica":{"enabled":true,"source":"up"},"externalClusters":[{"name":"up","connectionParameters":{"host":"x"}}],"plugins":[{"name":"cnpgi.plinth.dev"}]},"status":{"currentPrimary":"r-1"}}`,
		`{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"cnpgi.plinth.dev","parameters":{"retentionPolicy":"7d,keep:3","bogus":"x"}}]}}`,
		`{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"cnpgi.plinth.dev","parameters":{"serverName":"../../etc"}}]}}`,
		`{"metadata":{"name":"p\u0000g"}}`, `{"metadata":{"name":1e999999}}`, `[]`, `null`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, def []byte) {
		c, err := cluster.Parse(def)
		short(t, err)
		if err != nil {
			return
		}
		for _, plugin := range []string{"cnpgi.plinth.dev", "other"} {
			tg, err := c.ArchiveTarget(plugin)
			short(t, err)
			if err == nil && cluster.ServerNameProblem(tg.ServerName) != "" {
				t.Fatalf("an invalid server name passed: %q", tg.ServerName)
			}
			_, err = c.RestoreTarget(plugin)
			short(t, err)
		}
		_ = c.StreamingAvailable("pg-1")
		_ = c.SkipEmptyWALArchiveCheck()
	})
}

// short fails when an error is long or not UTF-8: it quotes client input at most briefly.
func short(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if msg := err.Error(); len(msg) > 1024 || !utf8.ValidString(msg) && !strings.Contains(msg, `\x`) {
		t.Fatalf("error of %d bytes: %.200q", len(msg), msg)
	}
}
