package maastest

import (
	"fmt"
	"net/url"
	"strings"
)

// parseOAuth reads the parameters of an OAuth header: comma-separated key="value" pairs,
// values URL-encoded. It is a decoder of what clients send: bounded and strict.
func parseOAuth(s string) (map[string]string, error) {
	if len(s) > 4096 {
		return nil, fmt.Errorf("authorization header too long")
	}
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok || len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
			return nil, fmt.Errorf("malformed OAuth parameter")
		}
		dec, err := url.QueryUnescape(v[1 : len(v)-1])
		if err != nil {
			return nil, fmt.Errorf("malformed OAuth parameter %s", k)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("duplicate OAuth parameter %s", k)
		}
		out[k] = dec
	}
	return out, nil
}
