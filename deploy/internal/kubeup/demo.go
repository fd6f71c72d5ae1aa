package kubeup

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/kubetest/kubelocal"
)

const (
	// OperatorImage is CloudNativePG's operator as deploy/k8s/cnpg names it: bin/cnpg-manager
	// at /manager, imported into the node (no registry serves upstream's image here).
	OperatorImage = "plinth.local/cloudnative-pg:1.30.0"
	// OperatorPath is where the operator's Deployment runs the manager, and where every
	// PostgreSQL pod's bootstrap-controller copies it from.
	OperatorPath = "/manager"
	// OperatorDeployment is the operator's Deployment in Namespace (config/default's name
	// prefixed cnpg-).
	OperatorDeployment = "cnpg-controller-manager"
	// ExampleCluster is the Cluster of deploy/k8s/examples/postgres/local.
	ExampleCluster = "pg-example"
	// sidecarSecret is the environment of cnpgi-plugin's sidecar in the example's pods
	// (README.md's Secrets table).
	sidecarSecret = "plinth-cnpgi-sidecar"
)

// Demo runs CloudNativePG's operator on a cluster where Apply ran overlays/local, and the
// example Cluster whose WAL and backups go through cnpgi-plugin, as deploy/k8s/README.md's
// "CloudNativePG on one machine" tells a user: the operator's image imported (manager, from
// `make tools-cnpg`), the operator applied from deploy/k8s/cnpg and rolled out, the sidecar's Secret made from the
// suite's (once), deploy/k8s/examples/postgres/local applied, and the Cluster waited for
// until Ready.
func Demo(ctx context.Context, o Options, c *kubelocal.Cluster, manager string) error {
	if o.Wait == 0 {
		o.Wait = 10 * time.Minute
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	k := kubectl{o: o}
	say := func(format string, a ...any) { fmt.Fprintf(o.Out, "kube-demo: "+format+"\n", a...) }
	say("importing %s (%s at %s)", OperatorImage, manager, OperatorPath)
	// As upstream's image lays it out: the instance manager of each architecture at
	// /operator/manager_<GOARCH>, which the operator offers to instances (only this machine's
	// here), and /manager, which it runs.
	if err := c.ImportProgram(ctx, OperatorImage, kubelocal.ProgramPath(manager, OperatorPath),
		kubelocal.ProgramPath(manager, "/operator/manager_"+runtime.GOARCH)); err != nil {
		return err
	}
	say("applying deploy/k8s/cnpg (CloudNativePG's CRDs, RBAC, webhooks and operator)")
	// Server-side: the CRDs are larger than the annotation client-side apply would keep.
	if _, err := k.run(ctx, nil, "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(o.Root, "deploy/k8s/cnpg")); err != nil {
		return err
	}
	if err := k.rolledOut(ctx, "deployment/"+OperatorDeployment); err != nil {
		return err
	}
	if err := k.sidecarSecret(ctx); err != nil {
		return err
	}
	say("applying deploy/k8s/examples/postgres/local (Cluster %s with cnpgi-plugin)", ExampleCluster)
	// The operator's webhooks answer once its pod is Ready, but the apiserver may not route to
	// them at once: a refusal is tried again.
	if err := retry(ctx, time.Minute, func() error {
		_, err := k.run(ctx, nil, "apply", "-k", filepath.Join(o.Root, "deploy/k8s/examples/postgres/local"))
		return err
	}); err != nil {
		return err
	}
	say("waiting for Cluster %s to be Ready", ExampleCluster)
	if _, err := k.run(ctx, nil, "-n", Namespace, "wait", "cluster/"+ExampleCluster, "--for=condition=Ready",
		fmt.Sprintf("--timeout=%ds", int(o.Wait.Seconds()))); err != nil {
		status, _ := k.run(ctx, nil, "-n", Namespace, "get", "cluster/"+ExampleCluster, "-o", "jsonpath={.status.phase}: {.status.phaseReason}")
		pods, _ := k.run(ctx, nil, "-n", Namespace, "get", "pods", "-l", "cnpg.io/cluster="+ExampleCluster, "-o", "wide")
		return fmt.Errorf("%w\ncluster: %s\n%s", err, status, pods)
	}
	say("Cluster %s is Ready", ExampleCluster)
	return nil
}

// sidecarSecret makes the sidecar's environment from the suite's Secrets: the catalog
// database (plinth-database's url) and the S3 credentials of plinth-cnpgi-s3. Made once.
func (k kubectl) sidecarSecret(ctx context.Context) error {
	if _, err := k.run(ctx, nil, "-n", Namespace, "get", "secret", sidecarSecret); err == nil {
		return nil
	}
	db, err := k.secretData(ctx, "plinth-database")
	if err != nil {
		return err
	}
	s3, err := k.secretData(ctx, "plinth-cnpgi-s3")
	if err != nil {
		return err
	}
	return k.createSecret(ctx, sidecarSecret, map[string]string{
		"PLINTH_DATABASE_URL":  db["url"],
		"S3_ACCESS_KEY_ID":     s3["access-key-id"],
		"S3_SECRET_ACCESS_KEY": s3["secret-access-key"],
	})
}

// secretData reads a Secret of Namespace (never printed).
func (k kubectl) secretData(ctx context.Context, name string) (map[string]string, error) {
	out, err := k.run(ctx, nil, "-n", Namespace, "get", "secret", name, "-o", "jsonpath={.data}")
	if err != nil {
		return nil, err
	}
	var encoded map[string]string
	if err := json.Unmarshal([]byte(out), &encoded); err != nil {
		return nil, fmt.Errorf("kubeup: Secret %s: %w", name, err)
	}
	data := map[string]string{}
	for key, v := range encoded {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("kubeup: Secret %s key %s: %w", name, key, err)
		}
		data[key] = string(b)
	}
	return data, nil
}

// retry calls try until it succeeds, ctx ends or within has passed (then its last error).
func retry(ctx context.Context, within time.Duration, try func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := try()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		if !strings.Contains(err.Error(), "webhook") && !strings.Contains(err.Error(), "connection refused") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(2 * time.Second):
		}
	}
}
