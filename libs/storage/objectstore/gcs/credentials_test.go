package gcs_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/storage/gcstest"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/gcs"
	"github.com/plinth-dev/plinth/libs/storage/secret"
)

// tokenServer is an OAuth2 token endpoint for a service account's JWT-bearer grant
// (RFC 7523): it checks the assertion's RS256 signature with the account's public key and
// its claims, and issues one access token per grant.
type tokenServer struct {
	*httptest.Server
	pub    *rsa.PublicKey
	email  string
	refuse bool

	mu     sync.Mutex
	issued []string
	errs   []string
}

func newTokenServer(t *testing.T, pub *rsa.PublicKey, email string, refuse bool) *tokenServer {
	ts := &tokenServer{pub: pub, email: email, refuse: refuse}
	ts.Server = httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *tokenServer) fail(w http.ResponseWriter, format string, args ...any) {
	ts.mu.Lock()
	ts.errs = append(ts.errs, fmt.Sprintf(format, args...))
	ts.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"refused"}`))
}

func (ts *tokenServer) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		ts.fail(w, "bad request %s: %v", r.Method, err)
		return
	}
	if g := r.PostForm.Get("grant_type"); g != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		ts.fail(w, "grant_type %q", g)
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		ts.fail(w, "assertion is not a JWS")
		return
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(ts.pub, crypto.SHA256, sum[:], sig); err != nil {
		ts.fail(w, "signature: %v", err)
		return
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Iss, Aud, Scope string
		Exp             int64
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		ts.fail(w, "claims: %v", err)
		return
	}
	if claims.Iss != ts.email || claims.Aud != ts.URL+"/token" ||
		!strings.Contains(claims.Scope, "https://www.googleapis.com/auth/devstorage.full_control") ||
		time.Unix(claims.Exp, 0).Before(time.Now()) {
		ts.fail(w, "claims %+v", claims)
		return
	}
	if ts.refuse {
		ts.fail(w, "refused as asked")
		return
	}
	tok := fmt.Sprintf("ya29.plinth-test-%d", time.Now().UnixNano())
	ts.mu.Lock()
	ts.issued = append(ts.issued, tok)
	ts.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
}

// serviceAccount writes a service account key whose token_uri is a token server started for
// the test; it returns the key file and the server.
func serviceAccount(t *testing.T, refuse bool) (string, *tokenServer) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	email := "archiver@plinth-test.iam.gserviceaccount.com"
	ts := newTokenServer(t, &priv.PublicKey, email, refuse)
	key, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "plinth-test", "private_key_id": "0123456789abcdef",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": email, "client_id": "1", "token_uri": ts.URL + "/token",
	})
	path := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(path, key, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, ts
}

// authRecorder is a reverse proxy in front of fake-gcs-server (which accepts any token)
// that records each request's Authorization header.
type authRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newAuthRecorder(t *testing.T, srv *gcstest.Server) *authRecorder {
	target, _ := url.Parse(srv.Endpoint)
	proxy := httputil.NewSingleHostReverseProxy(target)
	ar := &authRecorder{}
	ar.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ar.mu.Lock()
		ar.seen = append(ar.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		ar.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ar.Close)
	return ar
}

// exercise runs every kind of request through st.
func exercise(t *testing.T, st objectstore.Store) {
	t.Helper()
	ctx := ctxT(t)
	if err := st.Put(ctx, "wal/1", strings.NewReader("seg"), objectstore.PutOptions{Size: 3, IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	r, _, err := st.Get(ctx, "wal/1")
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Close()
	if _, err := st.Stat(ctx, "wal/1"); err != nil {
		t.Fatal(err)
	}
	for _, err := range st.List(ctx, "wal/") {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Delete(ctx, "wal/1"); err != nil {
		t.Fatal(err)
	}
}

// checkBearer: every request the store made carried a token the token server issued.
func checkBearer(t *testing.T, ts *tokenServer, ar *authRecorder) {
	t.Helper()
	ts.mu.Lock()
	issued, errs := slices.Clone(ts.issued), slices.Clone(ts.errs)
	ts.mu.Unlock()
	if len(errs) > 0 || len(issued) == 0 {
		t.Fatalf("token endpoint: issued %d tokens, refused: %v", len(issued), errs)
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if len(ar.seen) < 5 {
		t.Fatalf("only %d requests reached the server: %v", len(ar.seen), ar.seen)
	}
	for _, s := range ar.seen {
		_, tok, ok := strings.Cut(s, " Bearer ")
		if !ok || !slices.Contains(issued, tok) {
			t.Errorf("request without an issued bearer token: %q", s)
		}
	}
}

// TestServiceAccountKey: a key from a file and from the environment (Config's
// applicationCredentials) signs a grant at its token_uri, and the store sends the token.
func TestServiceAccountKey(t *testing.T) {
	srv := gcstest.Start(t)
	for _, source := range []string{"file", "env"} {
		t.Run(source, func(t *testing.T) {
			keyFile, ts := serviceAccount(t, false)
			ar := newAuthRecorder(t, srv)
			cfg := gcs.Config{Bucket: srv.Bucket(t), Endpoint: ar.URL}
			env := map[string]string{}
			if source == "file" {
				cfg.GoogleCredentials.ApplicationCredentials = secret.Ref{File: keyFile}
			} else {
				b, _ := os.ReadFile(keyFile)
				env["GCS_KEY"] = string(b)
				cfg.GoogleCredentials.ApplicationCredentials = secret.Ref{Env: "GCS_KEY"}
			}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			o, err := cfg.Options("p", env)
			if err != nil {
				t.Fatal(err)
			}
			st, err := gcs.New(ctxT(t), o)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			exercise(t, st)
			checkBearer(t, ts, ar)
		})
	}
}

// TestApplicationDefault: gkeEnvironment finds the key GOOGLE_APPLICATION_CREDENTIALS names.
func TestApplicationDefault(t *testing.T) {
	srv := gcstest.Start(t)
	keyFile, ts := serviceAccount(t, false)
	ar := newAuthRecorder(t, srv)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", keyFile)
	cfg := gcs.Config{Bucket: srv.Bucket(t), Endpoint: ar.URL, GoogleCredentials: gcs.GoogleCredentials{GKEEnvironment: true}}
	o, err := cfg.Options("", nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := gcs.New(ctxT(t), o)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	exercise(t, st)
	checkBearer(t, ts, ar)
}

// TestRefusedKey: a token endpoint that refuses the grant makes requests fail with
// ErrDenied, and the error does not carry the key.
func TestRefusedKey(t *testing.T) {
	srv := gcstest.Start(t)
	keyFile, _ := serviceAccount(t, true)
	key, _ := os.ReadFile(keyFile)
	st, err := gcs.New(ctxT(t), gcs.Options{Endpoint: srv.Endpoint, Bucket: srv.Bucket(t), ServiceAccountKey: key})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = st.Stat(ctxT(t), "k")
	if !errors.Is(err, objectstore.ErrDenied) {
		t.Fatalf("stat with a refused key: %v, want ErrDenied", err)
	}
	if strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Fatalf("the error shows the key: %v", err)
	}
}

// TestMetadataServerHangs: application default credentials with no key file fall back to
// the metadata server; one that never answers costs the caller its deadline, no more.
func TestMetadataServerHangs(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); held.Wait() })
	held.Go(func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // read nothing, answer nothing
		}
	})
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	t.Setenv("HOME", t.TempDir()) // no gcloud well-known file
	t.Setenv("GCE_METADATA_HOST", l.Addr().String())
	st, err := gcs.New(ctxT(t), gcs.Options{Endpoint: "http://127.0.0.1:1", Bucket: "bucket", ApplicationDefault: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := st.Stat(ctx, "k"); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("stat: %v, want the caller's deadline", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("stat outlived its context by 28 s: the metadata request is not bounded by it")
	}
}
