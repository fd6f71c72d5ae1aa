// Package oidctest is a real OpenID Provider for tests and for trying sign-in on one machine:
// zitadel/oidc's OpenID-certified op package (discovery, authorization with PKCE, token,
// JWKS, userinfo) over a small in-memory store of its own — users with passwords and groups,
// confidential clients, RS256 signing keys that can be rotated. Tests start it on 127.0.0.1
// with a random port (Start); `auth dev-oidc` serves one from a JSON file.
package oidctest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"
)

// User is a person of the provider.
type User struct {
	Username string   `json:"username"`
	Password string   `json:"password"`
	Subject  string   `json:"subject"` // empty: "sub-" + username
	Email    string   `json:"email"`
	Groups   []string `json:"groups"`
}

// Config is the provider's users and clients. AutoLogin, when set, names the user every
// authorization signs in as at once, without a login page (for trying SSO by hand).
type Config struct {
	Users     []User   `json:"users"`
	Clients   []Client `json:"clients"`
	AutoLogin string   `json:"auto_login"`
}

// Provider is a running provider.
type Provider struct {
	// Issuer is the provider's URL (http://127.0.0.1:<port>).
	Issuer string

	st       *storage
	srv      *http.Server
	lis      net.Listener
	auto     string
	mu       sync.Mutex
	tamper   func(idToken string) string
	served   sync.WaitGroup
	serveErr error
	closing  sync.Once
	closeErr error
}

// Start serves a provider with cfg on addr ("127.0.0.1:0" for a random port) until Close.
func Start(addr string, cfg Config) (*Provider, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p, err := newProvider("http://"+lis.Addr().String(), cfg)
	if err != nil {
		_ = lis.Close()
		return nil, err
	}
	p.lis = lis
	p.srv = &http.Server{Handler: p.handler(), ReadHeaderTimeout: 10 * time.Second}
	p.served.Add(1)
	go func() {
		defer p.served.Done()
		if err := p.srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
			p.serveErr = err
		}
	}()
	return p, nil
}

// Close stops the provider; closing it again does nothing.
func (p *Provider) Close() error {
	p.closing.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := p.srv.Shutdown(ctx)
		p.served.Wait()
		p.closeErr = errors.Join(err, p.serveErr)
	})
	return p.closeErr
}

func newProvider(issuer string, cfg Config) (*Provider, error) {
	key, err := newSigningKey()
	if err != nil {
		return nil, err
	}
	st := &storage{issuer: issuer, clients: map[string]*Client{}, users: map[string]*User{},
		requests: map[string]*authRequest{}, codes: map[string]string{}, tokens: map[string]string{}, keys: []*signingKey{key}}
	for i := range cfg.Clients {
		c := cfg.Clients[i]
		if c.ID == "" || c.Secret == "" || len(c.RedirectURIs) == 0 {
			return nil, fmt.Errorf("clients[%d]: id, secret and redirect_uris are required", i)
		}
		st.clients[c.ID] = &c
	}
	for i := range cfg.Users {
		u := cfg.Users[i]
		if u.Username == "" {
			return nil, fmt.Errorf("users[%d]: username is required", i)
		}
		if u.Subject == "" {
			u.Subject = "sub-" + u.Username
		}
		st.users[u.Username] = &u
	}
	if cfg.AutoLogin != "" && st.users[cfg.AutoLogin] == nil {
		return nil, fmt.Errorf("auto_login: no user %q", cfg.AutoLogin)
	}
	return &Provider{Issuer: issuer, st: st, auto: cfg.AutoLogin}, nil
}

// handler is the OP's endpoints, its login page, and the tampering hook on the token endpoint.
func (p *Provider) handler() http.Handler {
	var cryptoKey [32]byte
	_, _ = rand.Read(cryptoKey[:])
	o, err := op.NewProvider(&op.Config{CryptoKey: cryptoKey, CodeMethodS256: true, AuthMethodPost: true},
		p.st, op.StaticIssuer(p.Issuer), op.WithAllowInsecure())
	if err != nil { // only a bad static configuration fails, and this one is fixed
		panic(err)
	}
	callback := op.AuthCallbackURL(o)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		if p.auto != "" {
			p.finishLogin(w, r, callback, id, p.auto)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = loginPage.Execute(w, map[string]string{"ID": id, "Error": ""})
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		id, name, password := r.PostFormValue("id"), r.PostFormValue("username"), r.PostFormValue("password")
		p.st.mu.Lock()
		u := p.st.users[name]
		p.st.mu.Unlock()
		if u == nil || subtle.ConstantTimeCompare([]byte(u.Password), []byte(password)) != 1 {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			_ = loginPage.Execute(w, map[string]string{"ID": id, "Error": "wrong username or password"})
			return
		}
		p.finishLogin(w, r, callback, id, name)
	})
	mux.Handle("POST /oauth/token", p.tampered(o))
	mux.Handle("/", o)
	return mux
}

// finishLogin signs the authorization request id in as user name and sends the browser to the
// OP's callback, which redirects to the client with the code.
func (p *Provider) finishLogin(w http.ResponseWriter, r *http.Request, callback func(context.Context, string) string, id, name string) {
	p.st.mu.Lock()
	u := p.st.users[name]
	p.st.mu.Unlock()
	if err := p.st.signIn(id, u); err != nil {
		http.Error(w, "unknown or finished authorization request", http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, callback(op.ContextWithIssuer(r.Context(), p.Issuer), id), http.StatusFound)
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<title>Sign in — Plinth test OpenID provider</title>
<form method="post" action="/login">
<input type="hidden" name="id" value="{{.ID}}">
<p><label>Username <input name="username" autofocus></label></p>
<p><label>Password <input name="password" type="password"></label></p>
{{if .Error}}<p role="alert">{{.Error}}</p>{{end}}
<button type="submit">Sign in</button>
</form>`))

// Tamper makes the token endpoint answer with f(id_token) in place of the ID token it issued
// (nil: as issued): how tests stand in for a provider that lies or an attacker between it and
// Plinth, with tokens signed by the provider's own key (SignIDToken) or by another.
func (p *Provider) Tamper(f func(idToken string) string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tamper = f
}

// tampered is next with the token endpoint's answer rewritten by the Tamper hook.
func (p *Provider) tampered(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		f := p.tamper
		p.mu.Unlock()
		if f == nil {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		var answer map[string]any
		if rec.Code == http.StatusOK && json.Unmarshal(body, &answer) == nil {
			if tok, ok := answer["id_token"].(string); ok {
				answer["id_token"] = f(tok)
				body, _ = json.Marshal(answer)
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = bytes.NewReader(body).WriteTo(w)
	})
}

// Rotate makes a new signing key the one that signs; the old ones stay published unless
// dropOld (a provider that retired them).
func (p *Provider) Rotate(dropOld bool) (keyID string, err error) {
	k, err := newSigningKey()
	if err != nil {
		return "", err
	}
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	if dropOld {
		p.st.keys = []*signingKey{k}
	} else {
		p.st.keys = append([]*signingKey{k}, p.st.keys...)
	}
	return k.id, nil
}

// KeyID is the id of the key that signs now.
func (p *Provider) KeyID() string {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	return p.st.keys[0].id
}

// SetGroups changes a user's groups (the next ID token carries them).
func (p *Provider) SetGroups(username string, groups ...string) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	if u := p.st.users[username]; u != nil {
		u.Groups = groups
	}
}

// LoginFormURL is where a browser's POST of the login form goes.
func (p *Provider) LoginFormURL() string { return strings.TrimSuffix(p.Issuer, "/") + "/login" }
