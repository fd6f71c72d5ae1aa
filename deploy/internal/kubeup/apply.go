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
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

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
	natsArgs := []string{"--from-literal=url=nats://nats:4222"}
	for _, u := range []string{"auth", "stats", "kaas", "vagrant-server", "lvmd-agent", "cnpgi-plugin", "gateway", "admin"} {
		natsArgs = append(natsArgs, "--from-literal="+u+"-password="+secret(24))
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	secrets := []struct {
		name string
		args []string
	}{
		{"plinth-database", []string{"--from-literal=url=postgres://postgres@postgres:5432/plinth?sslmode=disable"}},
		{"plinth-nats", natsArgs},
		{"plinth-kaas", []string{"--from-literal=secret-key=" + base64.StdEncoding.EncodeToString(key)}},
		// overlays/local has no S3 of its own yet: cnpgi-plugin's store stays the base's.
		{"plinth-cnpgi-s3", []string{"--from-literal=access-key-id=plinth", "--from-literal=secret-access-key=" + secret(16)}},
		{"plinth-auth", []string{"--from-literal=admin-password=" + password}},
	}
	for _, s := range secrets {
		// Made once: a second run keeps the passwords the services already use.
		if _, err := k.run(ctx, nil, "-n", Namespace, "get", "secret", s.name); err == nil {
			if s.name == "plinth-auth" {
				password = ""
			}
			continue
		}
		if _, err := k.run(ctx, nil, append([]string{"-n", Namespace, "create", "secret", "generic", s.name}, s.args...)...); err != nil {
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
	for _, w := range strings.Fields(out) {
		if _, err := k.run(ctx, nil, "-n", Namespace, "rollout", "status", w, fmt.Sprintf("--timeout=%ds", int(o.Wait.Seconds()))); err != nil {
			pods, _ := k.run(ctx, nil, "-n", Namespace, "get", "pods", "-o", "wide")
			return fmt.Errorf("%w\n%s", err, pods)
		}
	}
	return nil
}

type kubectl struct{ o Options }

// run runs kubectl; its output is returned and, when out is set, copied there too. Secret
// values are never in an error: only the command's verb and object.
func (k kubectl) run(ctx context.Context, out io.Writer, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, k.o.Kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.o.Kubeconfig)
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

// redact keeps what a kubectl command does and drops literal values.
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
