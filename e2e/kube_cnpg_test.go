package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	primary := k.cnpgPrimary(t, cnpgCluster)
	psql := func(sql string) string { return k.cnpgSQL(t, primary, sql) }
	psql("CREATE TABLE IF NOT EXISTS e2e_rows (n int); INSERT INTO e2e_rows SELECT generate_series(1, 1000)")
	k.switchAndArchive(t, primary, cnpgCluster)

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

	k.checkCNPGRecoveryAndFailover(t, primary, backup)
	t.Logf("CloudNativePG journey (steps 1–6) in %s", time.Since(start).Round(time.Second))
}

// checkCNPGRecoveryAndFailover is #24's steps 4–6 on pg-example after steps 1–3 (backup, a
// base backup taken through the plugin):
//   - 4. a new Cluster bootstrapped by recovery from the plugin to a named restore point holds
//     exactly the rows committed before it;
//   - 6. a Cluster of two archiving plugins (cnpgi-plugin and a second Deployment of it under
//     another name) whose second entry says isWALArchiver: false archives through the first
//     only, although CloudNativePG's instance manager asks both (#606);
//   - 5. the primary's pod deleted, the replica is promoted and archives on the new timeline
//     (its history file, then its segments) without a failed archive call;
//   - 4. a Cluster recovered to the latest point after that failover holds every row, those
//     written on both timelines: the archive has no gap across the promotion.
func (k *kubeStack) checkCNPGRecoveryAndFailover(t *testing.T, primary, backup string) {
	psql := func(sql string) string { return k.cnpgSQL(t, primary, sql) }
	psql("CREATE TABLE e2e_recovery (n int); INSERT INTO e2e_recovery SELECT generate_series(1, 100)")
	psql("SELECT pg_create_restore_point('e2e-point')")
	psql("INSERT INTO e2e_recovery SELECT generate_series(101, 150)")
	k.switchAndArchive(t, primary, cnpgCluster)

	// The plugin's entry in each recovered cluster's externalClusters: pg-example's archive.
	const origin = `"externalClusters":[{"name":"origin","plugin":{"name":"cnpgi.plinth.dev","parameters":{"objectStore":"main","serverName":"pg-example"}}}]`
	// pg-two: its archive is new on every run (the first archive call checks it is empty).
	point, latest, two := "pg-point", "pg-latest", "pg-two-"+randomHex(t, 2)
	// CloudNativePG's webhook wants the backup to start from with a named target (only a
	// time can choose one): the Backup's id, as the plugin reported it.
	backupID := strings.TrimSpace(k.run(t, "-n", "plinth", "get", "backup", backup, "-o", "jsonpath={.status.backupId}"))
	if backupID == "" {
		t.Fatalf("Backup %s has no status.backupId", backup)
	}
	k.applyCNPGCluster(t, point, fmt.Sprintf(`"bootstrap":{"recovery":{"source":"origin","recoveryTarget":{"targetName":"e2e-point","backupID":%q}}},`, backupID)+origin)
	// Step 6's Cluster starts while this one recovers.
	removeSecond := k.deploySecondPlugin(t)
	k.applyCNPGCluster(t, two, `"plugins":[{"name":"cnpgi.plinth.dev","isWALArchiver":true,"parameters":{"objectStore":"main"}},`+
		`{"name":"`+secondPlugin+`","isWALArchiver":false,"parameters":{"objectStore":"main","serverName":"`+two+`-b"}}]`)
	k.waitCNPGCluster(t, point)
	if got := k.cnpgSQL(t, k.cnpgPrimary(t, point), "SELECT count(*), min(n), max(n) FROM e2e_recovery"); got != "100|1|100" {
		t.Errorf("%s, recovered to the restore point e2e-point, holds (count|min|max) %s, want 100|1|100", point, got)
	}
	k.deleteCNPGCluster(t, point)

	// 6. isWALArchiver: false on the second of two archiving plugins (#606): the first entry
	// (the WAL archiver) stores every segment under the cluster's name; the second, asked by
	// the instance manager for each segment too, declines and stores nothing under its own
	// server name; PostgreSQL's archiver counts no failure.
	k.waitCNPGCluster(t, two)
	twoPrimary := k.cnpgPrimary(t, two)
	sidecars := k.run(t, "-n", "plinth", "get", "pod", twoPrimary, "-o", `jsonpath={.spec.initContainers[?(@.restartPolicy=="Always")].name}`)
	if got := strings.Fields(sidecars); len(got) != 2 {
		t.Errorf("pod %s has the sidecars %v, want one per plugin", twoPrimary, got)
	}
	k.cnpgSQL(t, twoPrimary, "CREATE TABLE e2e_rows AS SELECT 1 AS n")
	segment := k.switchAndArchive(t, twoPrimary, two)
	// The segment is in the store before archive_command returns: PostgreSQL's count follows.
	if err := eventually(time.Minute, time.Second, func() error {
		if got := k.cnpgSQL(t, twoPrimary, "SELECT last_archived_wal >= '"+segment+"', failed_count FROM pg_stat_archiver"); got != "t|0" {
			return fmt.Errorf("pg_stat_archiver (archived %s or later | failed) %s, want t|0", segment, got)
		}
		return nil
	}); err != nil {
		t.Errorf("%s: %v", two, err)
	}
	// The second plugin was asked (the instance manager asks every plugin that can archive)
	// and said why it left the segment alone; the first was not told to decline.
	for _, c := range []struct {
		plugin, sidecar string // the sidecar's name (services/cnpgi-plugin/README.md, OperatorLifecycle)
		decline         bool
	}{{"cnpgi.plinth.dev", "plinth-cnpgi", false}, {secondPlugin, "plinth-cnpgi-cnpgi-b-plinth-dev", true}} {
		log := k.run(t, "-n", "plinth", "logs", twoPrimary, "-c", c.sidecar)
		declined := grepLines(log, "not this cluster's WAL archiver")
		if got := strings.Contains(declined, "spec.plugins[1].isWALArchiver is false"); got != c.decline {
			t.Errorf("%s's sidecar on %s: declined=%v, want %v; its log says:\n%s", c.plugin, twoPrimary, got, c.decline, declined)
		}
	}
	if objects, err := k.storedWALs(t, two+"-b"); err != nil || len(objects) != 0 {
		t.Errorf("%s's second plugin entry has isWALArchiver false, yet the store holds %v under its server name (%v)", two, objects, err)
	}
	k.deleteCNPGCluster(t, two)
	removeSecond()

	// 5. Failover: the primary's pod deleted, the replica promoted; rows on both timelines.
	psql("INSERT INTO e2e_recovery SELECT generate_series(151, 200)")
	k.switchAndArchive(t, primary, cnpgCluster)
	k.run(t, "-n", "plinth", "delete", "pod", primary)
	var promoted string
	if err := eventually(3*time.Minute, time.Second, func() error {
		out, err := k.try("-n", "plinth", "get", "cluster", cnpgCluster, "-o", "jsonpath={.status.currentPrimary} {.status.targetPrimary}")
		if err != nil {
			return err
		}
		current, target, _ := strings.Cut(strings.TrimSpace(out), " ")
		if current == primary || current == "" || current != target {
			return fmt.Errorf("current primary %q, target %q", current, target)
		}
		promoted = current
		return nil
	}); err != nil {
		t.Fatalf("no failover after deleting the primary %s: %v", primary, err)
	}
	k.cnpgSQL(t, promoted, "INSERT INTO e2e_recovery SELECT generate_series(201, 250)")
	newSegment := k.switchAndArchive(t, promoted, cnpgCluster)
	timeline := newSegment[:8]
	if timeline == "00000001" {
		t.Fatalf("the promoted %s writes %s, still on timeline 1", promoted, newSegment)
	}
	if err := k.storedWAL(t, cnpgCluster, timeline+".history"); err != nil {
		t.Errorf("the new timeline's history file: %v", err)
	}
	k.waitCNPGCluster(t, cnpgCluster) // the former primary back as a replica
	if err := eventually(time.Minute, 2*time.Second, func() error {
		got, err := k.try("-n", "plinth", "get", "cluster", cnpgCluster, "-o",
			`jsonpath={.status.conditions[?(@.type=="ContinuousArchiving")].status}`)
		if err == nil && strings.TrimSpace(got) != "True" {
			err = fmt.Errorf("ContinuousArchiving %q", got)
		}
		return err
	}); err != nil {
		t.Errorf("after the failover: %v", err)
	}
	// Every archive call that failed on either instance, as the instance manager logs it, is
	// CloudNativePG's own refusal while its status still names the old primary (the new
	// timeline's history file, archived the moment PostgreSQL promotes, is refused once and
	// retried); none is the plugin's — no overwrite refused, no segment it could not store.
	for _, pod := range strings.Fields(k.run(t, "-n", "plinth", "get", "pods", "-l", "cnpg.io/cluster="+cnpgCluster+",cnpg.io/podRole=instance",
		"-o", "jsonpath={.items[*].metadata.name}")) {
		failed := grepLines(k.run(t, "-n", "plinth", "logs", pod, "-c", "postgres"), "wal-archive command", "ArchiveWAL")
		var refusals int
		for line := range strings.Lines(failed) {
			if strings.Contains(line, "switchover in progress") {
				refusals++
			} else {
				t.Errorf("pod %s: an archive call failed after the failover: %s", pod, strings.TrimSpace(line))
			}
		}
		t.Logf("pod %s: %d archive calls refused by CloudNativePG until its status named the new primary", pod, refusals)
		if pod != promoted {
			continue
		}
		// PostgreSQL's own count agrees: no failed call went unseen.
		if got := k.cnpgSQL(t, pod, "SELECT failed_count FROM pg_stat_archiver"); got != strconv.Itoa(refusals) {
			t.Errorf("the promoted %s counts %s failed archive calls, %d of them CloudNativePG's refusals: %s", pod, got, refusals,
				k.cnpgSQL(t, pod, "SELECT last_failed_wal, last_failed_time FROM pg_stat_archiver"))
		}
	}

	// 4. Recovery to the latest point, across the promotion.
	k.applyCNPGCluster(t, latest, `"bootstrap":{"recovery":{"source":"origin"}},`+origin)
	k.waitCNPGCluster(t, latest)
	if got := k.cnpgSQL(t, k.cnpgPrimary(t, latest), "SELECT count(*), min(n), max(n) FROM e2e_recovery"); got != "250|1|250" {
		t.Errorf("%s, recovered to the latest point after the failover, holds (count|min|max) %s, want 250|1|250", latest, got)
	}
	k.deleteCNPGCluster(t, latest)
}

// secondPlugin is the plugin name of a second Deployment of cnpgi-plugin (deploySecondPlugin).
const secondPlugin = "cnpgi-b.plinth.dev"

// deploySecondPlugin runs a copy of the cnpgi-plugin Deployment under the plugin name
// secondPlugin, with a Service of its own that the operator discovers; it reuses the first's
// TLS Secrets (the server certificate names cnpgi-plugin: cnpg.io/pluginServerName says so)
// and its sidecar's ConfigMap and Secret. It returns once the operator has registered the
// plugin; remove deletes both.
func (k *kubeStack) deploySecondPlugin(t *testing.T) (remove func()) {
	t.Helper()
	const name = "cnpgi-plugin-b"
	var d map[string]any
	if err := json.Unmarshal(k.output(t, nil, "-n", "plinth", "get", "deployment", "cnpgi-plugin", "-o", "json"), &d); err != nil {
		t.Fatal(err)
	}
	delete(d, "status")
	d["metadata"] = map[string]any{"name": name, "namespace": "plinth"}
	spec, _ := d["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	podSpec, _ := tmpl["spec"].(map[string]any)
	containers, _ := podSpec["containers"].([]any)
	if len(containers) != 1 {
		t.Fatalf("cnpgi-plugin's Deployment has %d containers, want 1", len(containers))
	}
	labels := map[string]any{"app.kubernetes.io/name": name}
	spec["selector"] = map[string]any{"matchLabels": labels}
	tmpl["metadata"] = map[string]any{"labels": labels}
	renamed := false
	for _, e := range containers[0].(map[string]any)["env"].([]any) {
		if e, _ := e.(map[string]any); e["name"] == "PLINTH_CNPGI_PLUGIN_NAME" {
			e["value"], renamed = secondPlugin, true
		}
	}
	if !renamed {
		t.Fatal("cnpgi-plugin's Deployment does not set PLINTH_CNPGI_PLUGIN_NAME")
	}
	manifest, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	k.apply(t, string(manifest))
	k.run(t, "-n", "plinth", "rollout", "status", "deployment/"+name, "--timeout=3m")
	k.apply(t, fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"name":%q,"namespace":"plinth",
		"labels":{"cnpg.io/pluginName":%q},
		"annotations":{"cnpg.io/pluginPort":"7006","cnpg.io/pluginServerSecret":"cnpgi-plugin-server-tls",
			"cnpg.io/pluginClientSecret":"cnpgi-plugin-client-tls","cnpg.io/pluginServerName":"cnpgi-plugin"}},
		"spec":{"selector":{"app.kubernetes.io/name":%q},"ports":[{"name":"grpc-mtls","port":7006,"targetPort":"grpc-mtls"}]}}`, name, secondPlugin, name))
	if err := eventually(2*time.Minute, time.Second, func() error {
		out, err := k.try("-n", "plinth", "get", "events", "--field-selector", "involvedObject.kind=Service,involvedObject.name="+name+",reason=PluginRegistered", "-o", "name")
		if err == nil && strings.TrimSpace(out) == "" {
			err = fmt.Errorf("no PluginRegistered event on the Service %s", name)
		}
		return err
	}); err != nil {
		t.Logf("operator log:\n%s", k.output(t, nil, "-n", "plinth", "logs", "deploy/cnpg-controller-manager", "--tail=40"))
		t.Fatalf("the operator did not register %s: %v", secondPlugin, err)
	}
	return func() {
		// The operator's finalizer on the Service goes when it forgets the plugin.
		k.run(t, "-n", "plinth", "delete", "service", name, "--wait=false")
		k.run(t, "-n", "plinth", "delete", "deployment", name, "--wait=false")
	}
}

// cnpgPrimary is a Cluster's current primary pod.
func (k *kubeStack) cnpgPrimary(t *testing.T, cluster string) string {
	t.Helper()
	return strings.TrimSpace(k.run(t, "-n", "plinth", "get", "cluster", cluster, "-o", "jsonpath={.status.currentPrimary}"))
}

// cnpgSQL runs SQL as postgres in the database postgres of an instance pod (CloudNativePG
// sets PGHOST there), answering psql's unaligned tuples: its standard output only (kubectl
// itself may print to standard error, e.g. "Unknown stream id 1, discarding message").
func (k *kubeStack) cnpgSQL(t *testing.T, pod, sql string) string {
	t.Helper()
	return strings.TrimSpace(string(k.output(t, nil, "-n", "plinth", "exec", pod, "-c", "postgres", "--",
		"psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", "postgres", "-c", sql)))
}

// switchAndArchive switches the primary's WAL and waits for the segment in the store.
func (k *kubeStack) switchAndArchive(t *testing.T, primary, cluster string) string {
	t.Helper()
	segment := k.cnpgSQL(t, primary, "SELECT pg_walfile_name(pg_switch_wal())")
	if !walNameRE.MatchString(segment) {
		t.Fatalf("pg_switch_wal on %s: %q", primary, segment)
	}
	if err := eventually(2*time.Minute, time.Second, func() error { return k.storedWAL(t, cluster, segment) }); err != nil {
		t.Fatalf("segment %s of %s not archived: %v (pg_stat_archiver: %s)", segment, primary, err,
			k.cnpgSQL(t, primary, "SELECT archived_count, last_archived_wal, failed_count, last_failed_wal FROM pg_stat_archiver"))
	}
	return segment
}

// applyCNPGCluster applies a one-instance Cluster of the operand image on a 1 GiB volume,
// with more of its spec as JSON members.
func (k *kubeStack) applyCNPGCluster(t *testing.T, name, spec string) {
	t.Helper()
	k.apply(t, fmt.Sprintf(`{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster","metadata":{"name":%q,"namespace":"plinth"},
		"spec":{"instances":1,"imageName":"plinth.local/postgresql:15","imagePullPolicy":"IfNotPresent","storage":{"size":"1Gi"},%s}}`, name, spec))
}

// waitCNPGCluster waits until the operator says the Cluster is Ready, showing what it and
// its pods say otherwise.
func (k *kubeStack) waitCNPGCluster(t *testing.T, name string) {
	t.Helper()
	if out, err := k.try("-n", "plinth", "wait", "cluster/"+name, "--for=condition=Ready", "--timeout=6m"); err != nil {
		t.Logf("cluster %s:\n%s", name, k.output(t, nil, "-n", "plinth", "get", "cluster", name, "-o", "yaml"))
		t.Logf("pods:\n%s", k.output(t, nil, "-n", "plinth", "get", "pods", "-l", "cnpg.io/cluster="+name, "-o", "wide"))
		for _, pod := range strings.Fields(k.run(t, "-n", "plinth", "get", "pods", "-l", "cnpg.io/cluster="+name, "-o", "jsonpath={.items[*].metadata.name}")) {
			logs, _ := k.try("-n", "plinth", "logs", pod, "--all-containers", "--tail=60")
			t.Logf("pod %s:\n%s", pod, logs)
		}
		t.Fatalf("Cluster %s not Ready: %v\n%s", name, err, out)
	}
}

// deleteCNPGCluster deletes a Cluster the journey made, without waiting for its pods to go.
func (k *kubeStack) deleteCNPGCluster(t *testing.T, name string) {
	t.Helper()
	k.run(t, "-n", "plinth", "delete", "cluster", name, "--wait=false")
}

// grepLines keeps the lines of s that contain any of subs.
func grepLines(s string, subs ...string) string {
	var out []string
	for line := range strings.Lines(s) {
		for _, sub := range subs {
			if strings.Contains(line, sub) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "")
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
		case strings.HasPrefix(last, "failed"): // final: CloudNativePG does not retry a Backup
			return retryStop{fmt.Errorf("failed: %s", last)}
		}
		return fmt.Errorf("phase %q", last)
	}); err != nil {
		t.Fatalf("Backup %s: %v (last %q)", name, err, last)
	}
}
