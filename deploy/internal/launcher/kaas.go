package launcher

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/plinth-dev/plinth/deploy/internal/vagranttoken"
)

// kaasRESTOffset puts kaas's REST API (upstream's grpc-gateway paths) 200 above its gRPC port:
// 7203 by default, shifted with the others by the port offset.
const kaasRESTOffset = 200

// kaasStateDir is where make up keeps kaas's secret key, its vagrant-server token and the
// files of its machines.
func kaasStateDir(home string) string { return filepath.Join(home, "kaas") }

// kaasEnv runs kaas with the vagrant provider on this run's vagrant-server, auth's token
// check, and its key and token from files in its state directory.
func kaasEnv(c Config, placed map[string]Placement) map[string]string {
	home := c.Home
	dir := kaasStateDir(home)
	env := map[string]string{
		envAuthAddr:              placed["auth"].GRPC,
		envKaasProvider:          "vagrant",
		envKaasVagrantAddr:       placed["vagrant-server"].GRPC,
		envKaasVagrantTokenFile:  filepath.Join(dir, "vagrant-token"),
		envKaasVagrantMachineDir: filepath.Join(dir, "machines"),
		envKaasSecretKeyFile:     filepath.Join(dir, "secret-key"),
		envKaasVagrantRunnerID:   kaasRunnerID(home),
		// Absent unless the launcher is building the Kubernetes binaries (kubebuild.go).
		envKaasVagrantKubeBuildStatus: kubeBuildStatusPath(home),
		// The binaries make tools-k8s builds (the launcher's background build puts them there too).
		envKaasVagrantKubeBinDir: kubeBinDir(c.Root),
	}
	if host, port, err := net.SplitHostPort(placed["kaas"].GRPC); err == nil {
		if p, err := strconv.Atoi(port); err == nil {
			env[envKaasRESTAddr] = net.JoinHostPort(host, strconv.Itoa(p+kaasRESTOffset))
		}
	}
	return env
}

// kaasNeeds are what the bootstrap of a local cluster's control plane runs besides the
// Kubernetes binaries, and make for their one-time build when one is missing. kaas runs
// without them: it refuses clusters with FailedPrecondition naming what is missing.
func kaasNeeds(c Config) []Need {
	without := "its clusters are refused (FailedPrecondition naming it) until it is installed"
	needs := []Need{
		{Command: orDefault(c.KaasEtcd, "/usr/bin/etcd"), Package: "etcd-server", Why: "its clusters' etcd", Without: without},
		{Command: "curl", Package: "curl", Why: "its clusters' bootstrap", Without: without},
	}
	versions, err := kubeVersions(c.Root)
	if missing, _ := missingKubeBinaries(kubeBinDir(c.Root), versions); err == nil && len(missing) > 0 {
		needs = append(needs, Need{Command: "make", Package: "make", Why: "the one-time build of the Kubernetes binaries",
			Without: "the Kubernetes binaries are not built: clusters are refused naming them"})
	}
	return needs
}

// ensureKaasCredentials gives kaas a secret key (sealing its clusters' key material; made once,
// mode 0600) and a vagrant-server login token of its own, an operator's: on a fresh
// vagrant-server it first bootstraps it for the runner (ensureRunnerToken), then asks for a
// login token with the runner's. When neither can be had it says what to do and kaas starts anyway: its clusters
// wait, with the reason in their status, until a token is written to the file.
func ensureKaasCredentials(ctx context.Context, c Config, placed map[string]Placement, say func(string, ...any)) error {
	home := c.Home
	dir := kaasStateDir(home)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	keyFile := filepath.Join(dir, "secret-key")
	if _, err := os.Stat(keyFile); errors.Is(err, os.ErrNotExist) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
			return fmt.Errorf("keep kaas's secret key: %w", err)
		}
		say("made kaas's secret key in %s (it seals the clusters' keys: keep it with the database)", keyFile)
	}
	tokenFile := filepath.Join(dir, "vagrant-token")
	if _, err := os.Stat(tokenFile); err == nil {
		return nil
	}
	if err := ensureRunnerToken(ctx, c, placed, say); err != nil {
		return err
	}
	runnerToken, err := os.ReadFile(filepath.Join(runnerStateDir(home), "token"))
	if err != nil {
		say("kaas has no vagrant-server login token: write one to %s (GenerateLoginToken)", tokenFile)
		return nil
	}
	conn, err := grpc.NewClient(placed["vagrant-server"].GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("dial vagrant-server: %w", err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	token, err := vagranttoken.Login(ctx, conn, strings.TrimSpace(string(runnerToken)), vagranttoken.Operator)
	if err != nil {
		say("could not get kaas a vagrant-server login token (%v); write one to %s", err, tokenFile)
		return nil
	}
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		return fmt.Errorf("keep kaas's vagrant-server token: %w", err)
	}
	say("gave kaas a vagrant-server login token in %s", tokenFile)
	return nil
}
