// Package kubeup applies deploy/k8s/overlays/local to make kube-up's cluster the way
// deploy/k8s/README.md tells a user: the namespace, the Secrets (made once, kept on later
// runs), `kubectl apply -k` of the overlay, then waits until every workload is rolled out.
package kubeup

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/plinth-dev/plinth/deploy/internal/vagranttoken"
	"github.com/plinth-dev/plinth/libs/kubetest"
	"github.com/plinth-dev/plinth/libs/platform/atomicfile"
)

// Namespace is where the overlay puts the suite.
const Namespace = "plinth"

// Options say which cluster and which overlay.
type Options struct {
	// Root is the repository; Overlay is relative to it.
	Root    string
	Overlay string
	// Kubectl and Kubeconfig reach the cluster.
	Kubectl, Kubeconfig string
	// AdminPasswordFile receives the first admin's password (made here unless AdminPassword
	// is set); it is what auth's plinth-auth Secret holds.
	AdminPassword     string
	AdminPasswordFile string
	// Wait bounds the rollout of every workload.
	Wait time.Duration
	Out  io.Writer
}

// Apply creates what the overlay needs and applies it, returning once every Deployment and
// DaemonSet of Namespace is rolled out.
func Apply(ctx context.Context, o Options) error {
	if o.Wait == 0 {
		o.Wait = 5 * time.Minute
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	k := kubectl{o: o}
	if _, err := k.run(ctx, nil, "apply", "-f", filepath.Join(o.Root, "deploy/k8s/base/namespace.yaml")); err != nil {
		return err
	}
	password := o.AdminPassword
	if password == "" {
		password = secret(16)
	}
	nats := map[string]string{"url": "nats://nats:4222"}
	for _, u := range []string{"auth", "stats", "kaas", "vagrant-server", "lvmd-agent", "cnpgi-plugin", "gateway", "admin"} {
		nats[u+"-password"] = secret(24)
	}
	dbPassword := secret(24)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	secrets := []struct {
		name string
		data map[string]string
	}{
		// overlays/local's PostgreSQL (postgres.yaml) trusts no one: its superuser's password, and
		// the services' role plinth (not a superuser) with its password in their URL.
		{"plinth-database", map[string]string{"url": "postgres://plinth:" + dbPassword + "@postgres:5432/plinth?sslmode=disable"}},
		{"plinth-postgres", map[string]string{"postgres-password": secret(24), "plinth-pgpass": "*:*:*:plinth:" + dbPassword + "\n"}},
		{"plinth-nats", nats},
		{"plinth-kaas", map[string]string{"secret-key": base64.StdEncoding.EncodeToString(key)}},
		// overlays/local's S3 server (s3.yaml) takes them as its root credentials.
		{"plinth-cnpgi-s3", map[string]string{"access-key-id": "plinth", "secret-access-key": secret(16)}},
		{"plinth-auth", map[string]string{"admin-password": password}},
	}
	for _, s := range secrets {
		// Made once: a second run keeps the passwords the services already use.
		if _, err := k.run(ctx, nil, "-n", Namespace, "get", "secret", s.name); err == nil {
			if s.name == "plinth-auth" {
				password = ""
			}
			continue
		}
		if err := k.createSecret(ctx, s.name, s.data); err != nil {
			return err
		}
	}
	if password != "" && o.AdminPasswordFile != "" {
		if err := atomicfile.WritePrivate(o.AdminPasswordFile, []byte(password+"\n")); err != nil {
			return err
		}
	}
	if _, err := k.run(ctx, o.Out, "apply", "-k", filepath.Join(o.Root, o.Overlay)); err != nil {
		return err
	}
	out, err := k.run(ctx, nil, "-n", Namespace, "get", "deployments,daemonsets", "-o", "name")
	if err != nil {
		return err
	}
	if err := k.rolledOut(ctx, strings.Fields(out)...); err != nil {
		return err
	}
	return k.vagrantTokens(ctx)
}

// rolledOut waits until each workload is rolled out.
func (k kubectl) rolledOut(ctx context.Context, workloads ...string) error {
	for _, w := range workloads {
		if _, err := k.run(ctx, nil, "-n", Namespace, "rollout", "status", w, fmt.Sprintf("--timeout=%ds", int(k.o.Wait.Seconds()))); err != nil {
			pods, _ := k.run(ctx, nil, "-n", Namespace, "get", "pods", "-o", "wide")
			return fmt.Errorf("%w\n%s", err, pods)
		}
	}
	return nil
}

// vagrantTokens gives vagrant-runner and kaas their vagrant-server login tokens in the Secrets
// README.md's table names (plinth-vagrant-runner's token, plinth-kaas's vagrant-token), got as
// services/vagrant-server/README.md says: BootstrapToken on the fresh server, through a
// port-forward to its Service, then GenerateLoginToken with that token for kaas. Both read
// their token file again on their own once the kubelet updates the Secret volume (within its
// sync period); they are restarted so that they have it now. Done once: when the runner's
// Secret exists, or the server was bootstrapped by someone else (then it says what to do).
func (k kubectl) vagrantTokens(ctx context.Context) error {
	if _, err := k.run(ctx, nil, "-n", Namespace, "get", "secret", "plinth-vagrant-runner"); err == nil {
		return nil
	}
	addr, stop, err := kubetest.PortForward(ctx, k.o.Kubectl, k.o.Kubeconfig, Namespace, "svc/vagrant-server", 7004)
	if err != nil {
		return err
	}
	defer stop()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	runner, err := vagranttoken.Bootstrap(callCtx, conn)
	if errors.Is(err, vagranttoken.ErrBootstrapped) {
		fmt.Fprintf(k.o.Out, "vagrant-server was bootstrapped before: create the Secret plinth-vagrant-runner (key token) and plinth-kaas's vagrant-token with login tokens (GenerateLoginToken)\n")
		return nil
	}
	if err != nil {
		return fmt.Errorf("kubeup: bootstrap vagrant-server: %w", err)
	}
	kaas, err := vagranttoken.Login(callCtx, conn, runner, vagranttoken.Operator)
	if err != nil {
		return fmt.Errorf("kubeup: a login token for kaas: %w", err)
	}
	if err := k.createSecret(ctx, "plinth-vagrant-runner", map[string]string{"token": runner}); err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"stringData": map[string]string{"vagrant-token": kaas}})
	if err != nil {
		return err
	}
	if _, err := k.runWith(ctx, bytes.NewReader(patch), "-n", Namespace, "patch", "secret", "plinth-kaas", "--type=merge", "--patch-file=/dev/stdin"); err != nil {
		return err
	}
	fmt.Fprintf(k.o.Out, "bootstrapped vagrant-server: login tokens for vagrant-runner (Secret plinth-vagrant-runner) and kaas (plinth-kaas vagrant-token)\n")
	workloads := []string{"deployment/vagrant-runner", "deployment/kaas"}
	if _, err := k.run(ctx, nil, append([]string{"-n", Namespace, "rollout", "restart"}, workloads...)...); err != nil {
		return err
	}
	return k.rolledOut(ctx, workloads...)
}

type kubectl struct{ o Options }

// createSecret creates the Secret name in Namespace from a manifest on kubectl's standard
// input: no value is ever on a command line (where any user's ps shows it) or in an error.
func (k kubectl) createSecret(ctx context.Context, name string, data map[string]string) error {
	manifest, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]string{"name": name, "namespace": Namespace}, "stringData": data})
	if err != nil {
		return err
	}
	_, err = k.runWith(ctx, bytes.NewReader(manifest), "create", "-f", "-")
	return err
}

// run runs kubectl; its output is returned and, when out is set, copied there too. Secret
// values are never in an error: only the command's verb and object.
func (k kubectl) run(ctx context.Context, out io.Writer, args ...string) (string, error) {
	return k.command(ctx, out, nil, args...)
}

// runWith runs kubectl with stdin (a manifest or patch holding secrets).
func (k kubectl) runWith(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	return k.command(ctx, nil, stdin, args...)
}

func (k kubectl) command(ctx context.Context, out io.Writer, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, k.o.Kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.o.Kubeconfig)
	cmd.Stdin = stdin
	var buf bytes.Buffer
	cmd.Stdout = &buf
	if out != nil {
		cmd.Stdout = io.MultiWriter(&buf, out)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return buf.String(), fmt.Errorf("kubectl %s: %w: %s", redact(args), err, strings.TrimSpace(stderr.String()))
	}
	return buf.String(), nil
}

// redact keeps what a kubectl command does and drops literal values, should a caller pass
// one (createSecret never does).
func redact(args []string) string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		if lit, ok := strings.CutPrefix(a, "--from-literal="); ok {
			key, _, _ := strings.Cut(lit, "=")
			a = "--from-literal=" + key + "=…"
		}
		out = append(out, a)
	}
	return strings.Join(out, " ")
}

func secret(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
