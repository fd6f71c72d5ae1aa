package launcher

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// TestDevOIDCSignInThroughTheGateway runs auth and the gateway as `make up -dev-oidc` does
// (Run, with the real binaries built into the home, Postgres on 127.0.0.1:5432 and the
// embedded NATS) and signs in as a browser would: the gateway's /auth/oidc/dev/start, the dev
// provider's login page with the user and password the launcher wrote and printed, the
// callback, and /signin with a Plinth admin's token in the fragment — which the gateway
// accepts for an admin's call.
func TestDevOIDCSignInThroughTheGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs auth and the gateway")
	}
	if !answering(defaultPostgresAddr) {
		testenv.SkipOrFail(t, "no Postgres on "+defaultPostgresAddr)
	}
	root, err := filepath.Abs(theRepository)
	if err != nil {
		t.Fatal(err)
	}
	home, err := os.MkdirTemp("", "launcher-dev-oidc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	offset := freeDevOIDCOffset(t)
	dbName := fmt.Sprintf("plinth_launcher_oidc_%d", rand.Uint32())
	t.Cleanup(func() { dropTestDatabase(t, dbName) })
	var out testenv.SyncBuffer
	var environ []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLINTH_") {
			environ = append(environ, kv)
		}
	}
	c := Config{Root: root, Home: home, PortOffset: offset, DatabaseName: dbName, NoCeph: true, NoInstall: true,
		DevOIDC: true, ReadyTimeout: 5 * time.Minute, StopTimeout: 20 * time.Second, Out: &out, Environ: environ,
		only: []string{"auth", GatewayBinary}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- Run(ctx, c, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ended; err != nil {
			t.Errorf("the launcher ended with %v", err)
		}
		if t.Failed() {
			t.Logf("launcher output:\n%s", out.String())
		}
	})

	var e Endpoints
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if data, err := os.ReadFile(filepath.Join(home, EndpointsFile)); err == nil && json.Unmarshal(data, &e) == nil {
			break
		}
		select {
		case err := <-ended:
			ended <- err
			t.Fatalf("the launcher ended before it was ready: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the suite was not ready within 10 minutes")
		}
	}
	if e.Gateway == "" {
		t.Fatalf("no gateway in %+v", e)
	}

	// The user and password the launcher wrote for the provider, and said on the console.
	var op devOIDCConfig
	data, err := os.ReadFile(filepath.Join(home, DevOIDCFile))
	if err != nil || json.Unmarshal(data, &op) != nil || len(op.Users) != 1 || len(op.Clients) != 1 {
		t.Fatalf("%s: %v %s", DevOIDCFile, err, data)
	}
	user := op.Users[0]
	if user.Username != DevOIDCUser || len(user.Password) < 20 || !strings.Contains(out.String(), DevOIDCUser+" / "+user.Password) {
		t.Fatalf("the dev user %+v was not said on the console", user)
	}
	if want := "http://" + e.Gateway + "/auth/oidc/callback"; op.Clients[0].RedirectURIs[0] != want {
		t.Fatalf("redirect URIs %v, want %s first", op.Clients[0].RedirectURIs, want)
	}
	if strings.Contains(out.String(), op.Clients[0].Secret) {
		t.Error("the console shows the client secret")
	}

	// The browser: start → the provider's login page → its form → callback → /signin#token.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == "/signin" {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := browser.Get("http://" + e.Gateway + "/auth/oidc/dev/start")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="id" value="([^"]+)"`).FindSubmatch(page)
	if m == nil || resp.Request.URL.Host != devOIDCAddr(c) {
		t.Fatalf("start did not reach the dev provider's login page: %s %s at %s", resp.Status, page, resp.Request.URL)
	}
	resp, err = browser.PostForm("http://"+devOIDCAddr(c)+"/login",
		url.Values{"id": {string(m[1])}, "username": {user.Username}, "password": {user.Password}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	landed, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || landed.Path != "/signin" {
		t.Fatalf("the sign-in ended at %q (%s)", resp.Header.Get("Location"), resp.Status)
	}
	f, _ := url.ParseQuery(landed.EscapedFragment())
	if f.Get("error") != "" || f.Get("role") != "admin" || f.Get("username") != DevOIDCUser || f.Get("provider") != "dev" {
		t.Fatalf("the console was sent %s", landed)
	}

	// The token is a Plinth admin's, through the gateway.
	conn, err := grpc.NewClient(e.Gateway, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	ok, err := authpb.NewAuthServiceClient(conn).CheckToken(cctx, &authpb.CheckTokenRequest{Token: f.Get("token")})
	if err != nil || !ok.GetSuccess() {
		t.Fatalf("CheckToken through the gateway: %v %v", ok, err)
	}
	actx := metadata.AppendToOutgoingContext(cctx, "authorization", "Bearer "+f.Get("token"))
	if _, err := adminpb.NewAdminServiceClient(conn).ListUsers(actx, &adminpb.ListUsersRequest{}); err != nil {
		t.Fatalf("an admin's call with the dev provider's token: %v", err)
	}
}

// freeDevOIDCOffset is a port offset at which the ports this test's suite takes are free:
// above every e2e band (they end below 20000) and below ports.Min's random picks.
func freeDevOIDCOffset(t *testing.T) int {
	t.Helper()
	for offset := 20000 + 10*rand.IntN(100); offset < 21500; offset += 10 {
		all := true
		for _, p := range []int{defaultNATSPort, 7001, 7101, devOIDCPort, 8080, 8180} {
			if !portFree(p + offset) {
				all = false
				break
			}
		}
		if all {
			return offset
		}
	}
	t.Fatal("no free port offset in 20000..21500")
	return 0
}

// dropTestDatabase removes the database and role the launcher made on 127.0.0.1:5432.
func dropTestDatabase(t *testing.T, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, "postgres://postgres@"+defaultPostgresAddr+"/postgres?sslmode=disable")
	if err != nil {
		t.Logf("drop %s: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	for _, q := range []string{"DROP DATABASE IF EXISTS " + name + " WITH (FORCE)", "DROP ROLE IF EXISTS " + name} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Logf("%s: %v", q, err)
		}
	}
}

// TestDevOIDCFiles: the provider's client and auth's provider name the same callbacks — the
// gateway's and, when the user runs Koor's listener, Koor's on a browsable host — and the
// same secret, which auth reads from a file only the owner can read.
func TestDevOIDCFiles(t *testing.T) {
	home := t.TempDir()
	placed := map[string]Placement{GatewayBinary: {GRPC: "127.0.0.1:8090"}}
	c := Config{Home: home, PortOffset: 10, Environ: []string{envGatewayKoorAddr + "=:9090"}}
	password, err := writeDevOIDC(c, placed)
	if err != nil {
		t.Fatal(err)
	}
	var op devOIDCConfig
	var providers oidcProviders
	for name, v := range map[string]any{DevOIDCFile: &op, filepath.Join(devOIDCDir, "providers.json"): &providers} {
		data, err := os.ReadFile(filepath.Join(home, name))
		if err != nil || json.Unmarshal(data, v) != nil {
			t.Fatalf("%s: %v %s", name, err, data)
		}
	}
	want := []string{"http://127.0.0.1:8090/auth/oidc/callback", "http://127.0.0.1:9090/api/oauth2/callback/dev"}
	p := providers.Providers[0]
	if fmt.Sprint(op.Clients[0].RedirectURIs) != fmt.Sprint(want) || fmt.Sprint(p.RedirectURLs) != fmt.Sprint(want) {
		t.Fatalf("callbacks %v and %v, want %v", op.Clients[0].RedirectURIs, p.RedirectURLs, want)
	}
	if op.Users[0].Password != password || op.Users[0].Groups[0] != "plinth-admins" || p.Roles["plinth-admins"] != "admin" {
		t.Fatalf("user %+v, roles %v", op.Users[0], p.Roles)
	}
	if p.Issuer != "http://127.0.0.1:7018" || p.Name != "dev" || p.ClientID != op.Clients[0].ID {
		t.Fatalf("provider %+v", p)
	}
	secret, err := os.ReadFile(p.ClientSecretFile)
	fi, _ := os.Stat(p.ClientSecretFile)
	if err != nil || strings.TrimSpace(string(secret)) != op.Clients[0].Secret || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v %v", err, fi.Mode())
	}
	again, _ := writeDevOIDC(c, placed)
	if again == password {
		t.Fatal("a second start kept the password")
	}
	if _, err := writeDevOIDC(Config{Home: home}, map[string]Placement{}); err == nil {
		t.Fatal("written without a gateway to come back to")
	}
	if env := authEnv(Config{Home: home, DevOIDC: true}, nil); env[envAuthOIDCProvidersFile] != filepath.Join(home, devOIDCDir, "providers.json") {
		t.Fatalf("auth's environment: %v", env)
	}
	if env := authEnv(Config{Home: home}, nil); env[envAuthOIDCProvidersFile] != "" {
		t.Fatalf("auth has a provider without -dev-oidc: %v", env)
	}
	root, _ := filepath.Abs(theRepository)
	if _, err := ParseConfig([]string{"-root", root, "-dev-oidc", "-infra-only"}, nil, io.Discard); err == nil {
		t.Fatal("-dev-oidc with -infra-only accepted")
	}
}
