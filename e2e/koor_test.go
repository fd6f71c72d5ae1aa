package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// journeyKoor: Koor data-control-center's dashboard against the suite, as its UI speaks
// (services/gateway/README.md, "Koor's dashboard"): its configuration, a Connect-JSON Login
// under /api, and the overview's three calls with the bearer token. What it renders must be
// what the console shows: each answer under /api is the same as the unprefixed call's, from
// the real stats.
func (s *journeySuite) journeyKoor(t *testing.T) {
	s.requireService(t, "stats")
	base := "http://" + s.endpoints.Gateway
	hc := &http.Client{Timeout: callTimeout}
	// post sends what the UI sends: fetch's bare POST for the config, connect-web's unary
	// JSON call (Content-Type application/json, Connect-Protocol-Version 1) otherwise.
	post := func(path, token, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(callCtx(t), http.MethodPost, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Connect-Protocol-Version", "1")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		return resp.StatusCode, b
	}

	code, body := post("/api/config", "", "")
	var cfg struct {
		Version string `json:"version"`
		Login   struct {
			Providers []json.RawMessage `json:"providers"`
		} `json:"login"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &cfg) != nil || cfg.Version == "" || cfg.Login.Providers == nil {
		t.Fatalf("POST /api/config: %d %s", code, body)
	}

	code, body = post("/api/services.auth.AuthService/Login", "", fmt.Sprintf(`{"username":"admin","password":%q}`, s.password))
	var login struct {
		Token   string `json:"token"`
		Expires struct {
			Timestamp string `json:"timestamp"`
		} `json:"expires"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &login) != nil || !strings.HasPrefix(login.Token, "plt_") || login.Expires.Timestamp == "" {
		t.Fatalf("Login under /api: %d (token and expires.timestamp expected)", code)
	}

	for _, method := range []string{"GetClusterStats", "GetClusterRadar", "GetClusterResources"} {
		path := "/stats.StatsService/" + method
		if code, body := post("/api"+path, "", "{}"); code != http.StatusUnauthorized || !bytes.Contains(body, []byte(`"unauthenticated"`)) {
			t.Errorf("%s under /api without a token: %d %s", method, code, body)
		}
		// stats answers from its collector's newest view, refreshed every few seconds: the
		// two answers must agree when read back to back (a refresh between may differ).
		err := eventually(time.Minute, 500*time.Millisecond, func() error {
			code, koor := post("/api"+path, login.Token, "{}")
			_, console := post(path, login.Token, "{}")
			if code != http.StatusOK {
				return fmt.Errorf("%d %s", code, koor) // Unavailable until stats' first collection
			}
			if !jsonEqual(koor, console) {
				return fmt.Errorf("under /api %s, without %s", koor, console)
			}
			if len(koor) < 3 {
				return retryStop{fmt.Errorf("an empty answer %s: the dashboard would show nothing", koor)}
			}
			t.Logf("%s: %.300s", method, koor)
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", method, err)
		}
	}
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
