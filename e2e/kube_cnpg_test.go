package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cnpgCluster is deploy/k8s/examples/postgres/local's Cluster (kubeup.ExampleCluster).
const cnpgCluster = "pg-example"

// checkCNPGOperator is make kube-demo and what a user checks after it (#24, steps 1–3): the
// CloudNativePG operator built from its module (make tools-cnpg) discovers cnpgi-plugin by its
// Service, injects the plugin's sidecar into every instance pod of pg-example and reports
// continuous archiving; rows written and a WAL switch put the segment in the in-cluster S3
// under barman's layout; a Backup with method plugin completes, and a ScheduledBackup fires.
func (k *kubeStack) checkCNPGOperator(t *testing.T) {
	bin := filepath.Dir(k.kubectl)
	if _, err := os.Stat(filepath.Join(bin, "cnpg-manager")); err != nil {
		skipOrFail(t, "CloudNativePG's operator is not built (make tools-cnpg): %v", err)
	}
	ctx, cancel := context.WithTimeout(k.ctx, 15*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, k.plinthKube, "demo", "-dir", k.cluster.Dir, "-bin", bin, "-root", k.root)
	out, err := cmd.CombinedOutput()
	t.Logf("plinth-kube demo (%s):\n%s", time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Logf("operator log:\n%s", k.output(t, nil, "-n", "plinth", "logs", "deploy/cnpg-controller-manager", "--tail=80"))
		t.Fatalf("plinth-kube demo: %v", err)
	}

	// 1. The sidecar in each instance pod (a native sidecar: an init container that keeps
	// running), continuous archiving reported by the operator.
	pods := strings.Fields(k.run(t, "-n", "plinth", "get", "pods", "-l", "cnpg.io/cluster="+cnpgCluster+",cnpg.io/podRole=instance",
		"-o", `jsonpath={range .items[*]}{.metadata.name}{"="}{range .spec.initContainers[?(@.restartPolicy=="Always")]}{.name}{","}{end}{" "}{end}`))
	if len(pods) != 2 {
		t.Fatalf("instance pods of %s: %v, want 2", cnpgCluster, pods)
	}
	for _, p := range pods {
		if name, sidecars, _ := strings.Cut(p, "="); !strings.Contains(","+sidecars, ",plinth-cnpgi,") {
			t.Errorf("pod %s has the sidecars %q: no plinth-cnpgi", name, sidecars)
		}
	}
	if err := eventually(3*time.Minute, 2*time.Second, func() error {
		got, err := k.try("-n", "plinth", "get", "cluster", cnpgCluster, "-o",
			`jsonpath={.status.conditions[?(@.type=="ContinuousArchiving")].status} {.status.conditions[?(@.type=="ContinuousArchiving")].message}`)
		if err == nil && !strings.HasPrefix(got, "True") {
			err = fmt.Errorf("ContinuousArchiving %q", got)
		}
		return err
	}); err != nil {
		t.Errorf("the operator does not report continuous archiving: %v", err)
	}

	// 2. Rows written on the primary, the WAL switched: the segment lands in the store.
	primary := strings.TrimSpace(k.run(t, "-n", "plinth", "get", "cluster", cnpgCluster, "-o", "jsonpath={.status.currentPrimary}"))
	psql := func(sql string) string {
		return strings.TrimSpace(k.run(t, "-n", "plinth", "exec", primary, "-c", "postgres", "--",
			"psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", "postgres", "-c", sql))
	}
	psql("CREATE TABLE IF NOT EXISTS e2e_rows (n int); INSERT INTO e2e_rows SELECT generate_series(1, 1000)")
	segment := psql("SELECT pg_walfile_name(pg_switch_wal())")
	if !walNameRE.MatchString(segment) {
		t.Fatalf("pg_switch_wal on %s: %q", primary, segment)
	}
	if err := eventually(2*time.Minute, time.Second, func() error { return k.storedWAL(t, cnpgCluster, segment) }); err != nil {
		t.Errorf("segment %s of %s not archived: %v (pg_stat_archiver: %s)", segment, primary, err,
			psql("SELECT archived_count, last_archived_wal, failed_count, last_failed_wal FROM pg_stat_archiver"))
	}

	// 3. A base backup through the plugin, on demand and from a schedule.
	backup := "e2e-backup-" + randomHex(t, 3)
	k.apply(t, fmt.Sprintf(`{"apiVersion":"postgresql.cnpg.io/v1","kind":"Backup","metadata":{"name":%q,"namespace":"plinth"},
		"spec":{"cluster":{"name":%q},"method":"plugin","pluginConfiguration":{"name":"cnpgi.plinth.dev"}}}`, backup, cnpgCluster))
	k.waitBackup(t, backup)
	scheduled := "e2e-scheduled-" + randomHex(t, 3)
	k.apply(t, fmt.Sprintf(`{"apiVersion":"postgresql.cnpg.io/v1","kind":"ScheduledBackup","metadata":{"name":%q,"namespace":"plinth"},
		"spec":{"schedule":"0 0 3 * * *","immediate":true,"cluster":{"name":%q},"method":"plugin","pluginConfiguration":{"name":"cnpgi.plinth.dev"}}}`, scheduled, cnpgCluster))
	var fired string
	if err := eventually(time.Minute, time.Second, func() error {
		out, err := k.try("-n", "plinth", "get", "backup", "-l", "cnpg.io/scheduled-backup="+scheduled, "-o", "jsonpath={.items[*].metadata.name}")
		if fired = strings.TrimSpace(out); err == nil && fired == "" {
			err = fmt.Errorf("no Backup yet")
		}
		return err
	}); err != nil {
		t.Fatalf("ScheduledBackup %s did not fire: %v", scheduled, err)
	}
	k.waitBackup(t, strings.Fields(fired)[0])
	t.Logf("CloudNativePG journey (steps 1–3) in %s", time.Since(start).Round(time.Second))
}

// apply applies one manifest (JSON) from standard input.
func (k *kubeStack) apply(t *testing.T, manifest string) {
	t.Helper()
	k.output(t, strings.NewReader(manifest), "apply", "-f", "-")
}

// waitBackup waits until the Backup completes, failing with its phase and error otherwise.
func (k *kubeStack) waitBackup(t *testing.T, name string) {
	t.Helper()
	var last string
	if err := eventually(5*time.Minute, 2*time.Second, func() error {
		out, err := k.try("-n", "plinth", "get", "backup", name, "-o", "jsonpath={.status.phase} {.status.error}")
		last = strings.TrimSpace(out)
		switch {
		case err != nil:
			return err
		case strings.HasPrefix(last, "completed"):
			return nil
		case strings.HasPrefix(last, "failed"):
			return fmt.Errorf("failed: %s", last)
		}
		return fmt.Errorf("phase %q", last)
	}); err != nil {
		t.Fatalf("Backup %s: %v (last %q)", name, err, last)
	}
}
