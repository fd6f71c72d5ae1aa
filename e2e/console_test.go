package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	walpb "github.com/plinth-dev/plinth/libs/api/cnpgi/wal/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
)

// chromiumPath is Debian's chromium; the test never downloads a browser.
const chromiumPath = "/usr/bin/chromium"

// TestConsoleInBrowser starts the suite as `make up` does and runs the console's browser test
// (console/e2e/browser.mjs: playwright-core driving chromium) against the gateway: sign in,
// every page with one real action (a vagrant job's output streamed live, a cluster created and
// deleted, a volume created and removed, a real backup's job complete), sign out, the revoked token refused. Screenshots of
// each page go to console/test-output/browser (PLINTH_CONSOLE_OUTPUT overrides).
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	node, consoleDir := browserTools(t, root)
	out := os.Getenv("PLINTH_CONSOLE_OUTPUT")
	if out == "" {
		out = filepath.Join(consoleDir, "test-output", "browser")
	}
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}

	bin := buildLauncher(t, root)
	home := newHome(t)
	dbName := fmt.Sprintf("plinth_e2e_console_%d", rand.Uint32())
	password := fmt.Sprintf("console-%x", rand.Uint64())
	// A real data directory whose WAL the plugin archives, for the Backups page.
	pgdata, err := initPGData(t, filepath.Join(home, "pgdata"))
	if err != nil {
		skipOrFail(t, "no PostgreSQL data directory for the Backups page: %v", err)
	}
	// -dev-oidc: the dev OpenID provider, for the console's "Sign in with Dev" (oidc.mjs).
	l := startLauncherWithFlags(t, bin, root, home, freeOffset(t, bandConsole), []string{"-dev-oidc"}, "PLINTH_DATABASE_NAME="+dbName,
		"PLINTH_ADMIN_PASSWORD="+password, ownDevVG(t, home), "PLINTH_CNPGI_PGDATA="+pgdata)
	e := l.waitEndpoints(t, readyTimeout)
	defer dropDatabase(t, e.Database, dbName)

	gateway, lvmd := "", false
	for _, s := range e.Services {
		switch s.Name {
		case "gateway":
			gateway = s.GRPC
		case "lvmd-agent":
			lvmd = true
		}
	}
	if !lvmd {
		skipOrFail(t, "the Volumes page needs lvmd-agent, which the launcher skipped (it needs root and lvm2)")
	}
	if gateway == "" {
		t.Fatalf("the launcher runs no gateway: %+v", e.Services)
	}
	vagrantToken, err := os.ReadFile(filepath.Join(home, "vagrant-runner", "token"))
	if err != nil {
		t.Fatalf("the launcher kept no vagrant-server token for the runner: %v", err)
	}

	runnerID, err := os.ReadFile(filepath.Join(home, "vagrant-runner", "id"))
	if err != nil {
		t.Fatalf("the launcher's runner kept no id: %v", err)
	}

	walServer, segment := archiveForConsole(t, gateway, password, pgdata)
	offlineRunner := offlineRunnerForConsole(t, gateway, strings.TrimSpace(string(vagrantToken)))
	volumeBackup, store := backupForConsole(t, gateway, password)

	devOIDCPassword := devOIDCPassword(t, home)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(consoleDir, "e2e", "browser.mjs"))
	cmd.Dir = consoleDir
	cmd.Env = append(os.Environ(),
		"CONSOLE_URL=http://"+gateway,
		"PLINTH_USERNAME=admin",
		"PLINTH_PASSWORD="+password,
		// No Vagrant token: the console gets its own from the Plinth session.
		"VAGRANT_RUNNER_ID="+strings.TrimSpace(string(runnerID)),
		"VAGRANT_OFFLINE_RUNNER_ID="+offlineRunner,
		"OUT_DIR="+out,
		"CHROMIUM="+chromiumPath,
		"CNPGI_SERVER="+walServer,
		"CNPGI_WAL="+segment,
		"LVMD_BACKUP="+volumeBackup,
		"DEV_OIDC_USER=dev",
		"DEV_OIDC_PASSWORD="+devOIDCPassword,
	)
	cmd.Env = append(cmd.Env, store.env()...)
	result, err := cmd.CombinedOutput()
	t.Logf("browser test:\n%s", result)
	if err != nil {
		t.Fatalf("browser test failed (%v); screenshots in %s", err, out)
	}
	for _, shot := range []string{"01-signin", "02-storage", "03-vagrant", "04-clusters", "05-volumes", "05-volume-page", "05-backups", "05-backup-server", "07-signed-out", "09-admin", "09-admin-refused", "11-second-tab",
		"oidc-01-signin", "oidc-02-signed-in", "oidc-03-refused"} {
		if st, err := os.Stat(filepath.Join(out, shot+".png")); err != nil || st.Size() == 0 {
			t.Errorf("no screenshot %s.png in %s (%v)", shot, out, err)
		}
	}
	l.interrupt(t, stopTimeout)
}

// archiveForConsole archives a real WAL segment (initdb's REDO segment) through the gateway
// as an operator would, so that the Backups page has a server to show; it returns the server
// name and the segment's name.
func archiveForConsole(t *testing.T, gateway, password, pgdata string) (server, segment string) {
	t.Helper()
	conn, err := grpc.NewClient(gateway, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial gateway %s: %v", gateway, err)
	}
	defer conn.Close()
	login, err := authpb.NewAuthServiceClient(conn).Login(callCtx(t), &authpb.LoginRequest{Username: "admin", Password: password})
	if err != nil {
		t.Fatalf("Login through the gateway: %v", err)
	}
	segment = redoSegmentOf(t, pgdata)
	server = "console-" + randomHex(t, 4)
	cluster := fmt.Appendf(nil, `{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster","metadata":{"name":%q,"namespace":"default"},`+
		`"spec":{"instances":1,"plugins":[{"name":"cnpgi.plinth.dev","isWALArchiver":true}]}}`, server)
	req := &walpb.WALArchiveRequest{ClusterDefinition: cluster, SourceFileName: filepath.Join(pgdata, "pg_wal", segment)}
	if _, err := walpb.NewWALClient(conn).Archive(withToken(callCtx(t), login.GetToken()), req); err != nil {
		t.Fatalf("WAL Archive of %s through the gateway: %v", segment, err)
	}
	return server, segment
}

// browserTools skips (fails, strict) without chromium or node, runs npm ci in console/ when
// its modules are missing, and returns node's path and the console directory.
func browserTools(t *testing.T, root string) (node, consoleDir string) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		skipOrFail(t, "no %s (apt-get install chromium): %v", chromiumPath, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skipOrFail(t, "no node on PATH: %v", err)
	}
	consoleDir = filepath.Join(root, "console")
	if _, err := os.Stat(filepath.Join(consoleDir, "node_modules", "playwright-core")); err != nil {
		npm := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		npm.Dir = consoleDir
		if out, err := npm.CombinedOutput(); err != nil {
			skipOrFail(t, "console: npm ci failed (needs the npm registry): %v\n%s", err, out)
		}
	}
	return node, consoleDir
}

// devOIDCPassword is the password of the user dev that `plinth-up -dev-oidc` wrote for its
// dev OpenID provider (HOME/dev-oidc.json).
func devOIDCPassword(t *testing.T, home string) string {
	t.Helper()
	var op struct {
		Users []struct {
			Username string `json:"username"`
			Password string `json:"password"`
		} `json:"users"`
	}
	data, err := os.ReadFile(filepath.Join(home, "dev-oidc.json"))
	if err != nil || json.Unmarshal(data, &op) != nil || len(op.Users) == 0 || op.Users[0].Username != "dev" || op.Users[0].Password == "" {
		t.Fatalf("the launcher wrote no dev OpenID user: %v", err)
	}
	return op.Users[0].Password
}
