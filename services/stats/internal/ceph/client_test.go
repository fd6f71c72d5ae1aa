package ceph

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeDashboard answers like the mgr dashboard: tokens from /api/auth, refused (401) once it
// revokes them, /api/health/full only with the v1.0 API version.
type fakeDashboard struct {
	logins atomic.Int32
	valid  atomic.Value // string: the token it accepts
	report []byte
}

func (f *fakeDashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/api/auth":
		var creds map[string]string
		_ = json.NewDecoder(r.Body).Decode(&creds)
		if creds["username"] != "admin" || creds["password"] != "pw" {
			http.Error(w, `{"detail": "Invalid credentials"}`, http.StatusBadRequest)
			return
		}
		token := "token-" + string(rune('a'+f.logins.Add(1)))
		f.valid.Store(token)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]string{"token": token})
	case "/api/health/full":
		if r.Header.Get("Authorization") != "Bearer "+f.valid.Load().(string) {
			http.Error(w, `{"detail": "Token expired"}`, http.StatusUnauthorized)
			return
		}
		if r.Header.Get("Accept") != apiV1 {
			http.Error(w, "wrong version", http.StatusUnsupportedMediaType)
			return
		}
		_, _ = w.Write(f.report)
	default:
		http.NotFound(w, r)
	}
}

func TestDashboardLogsInAgainWhenTheTokenIsRefused(t *testing.T) {
	f := &fakeDashboard{report: readTestdata(t, "seed-ok.json")}
	f.valid.Store("")
	srv := httptest.NewServer(f)
	defer srv.Close()
	src, err := New(Config{URL: strings.Replace(srv.URL, "http://", "http://admin:pw@", 1)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := src.ReadCeph(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.logins.Load(); n != 1 {
		t.Fatalf("%d logins for three reads; the token must be reused", n)
	}
	f.valid.Store("revoked") // the dashboard restarted, or the token expired
	if _, err := src.ReadCeph(ctxT(t)); err != nil {
		t.Fatalf("after the token expired: %v", err)
	}
	if n := f.logins.Load(); n != 2 {
		t.Fatalf("%d logins; want one more after the 401", n)
	}
}

func TestDashboardTLS(t *testing.T) {
	f := &fakeDashboard{report: readTestdata(t, "seed-ok.json")}
	f.valid.Store("")
	srv := httptest.NewTLSServer(f)
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		cfg Config
		ok  bool
	}{
		"untrusted":     {Config{URL: srv.URL, User: "admin", Password: "pw"}, false},
		"custom CA":     {Config{URL: srv.URL, User: "admin", Password: "pw", CAFile: ca}, true},
		"skip verify":   {Config{URL: srv.URL, User: "admin", Password: "pw", InsecureSkipVerify: true}, true},
		"wrong user/pw": {Config{URL: srv.URL, User: "admin", Password: "nope", CAFile: ca}, false},
	} {
		src, err := New(c.cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, err = src.ReadCeph(ctxT(t))
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), c.cfg.Password) {
			t.Errorf("%s: the error shows the password: %v", name, err)
		}
	}
}

func TestConfigChecks(t *testing.T) {
	for _, bad := range []Config{
		{URL: "ftp://x"}, {URL: "http://"}, {URL: "https://mgr:8443"}, // no credentials for the dashboard
		{URL: "https://mgr:8443", User: "u", Password: "p", CAFile: "/nonexistent"},
	} {
		if _, err := New(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if src, err := New(Config{URL: "http://mgr:9283/metrics"}); err != nil || src == nil {
		t.Errorf("prometheus needs no credentials: %v", err)
	}
}
