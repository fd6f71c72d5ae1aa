package upstreamtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudnative-pg/cnpg-i/pkg/backup"
	"github.com/cloudnative-pg/cnpg-i/pkg/reconciler"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/plinth-dev/plinth/libs/kubetest"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

var objectStores = schema.GroupVersionResource{Group: "barmancloud.cnpg.io", Version: "v1", Resource: "objectstores"}

// TestObjectStoreResourceEndToEnd is a barman-cloud user's Cluster on the plugin: its store
// is an ObjectStore resource (plugin-barman-cloud's CRD, on a real kube-apiserver) with its
// keys in a Secret, named by barmanObjectName. The operator's Pre hook grants the Cluster's
// instances their Role; a real PostgreSQL archives through the plugin into the ObjectStore's
// destinationPath; a base backup through the upstream Backup client completes there and
// writes status.serverRecoveryWindow as plugin-barman-cloud does; a Backup the store refuses
// records the failure time and keeps the window.
func TestObjectStoreResourceEndToEnd(t *testing.T) {
	t.Parallel()
	k := kubetest.Start(t, kubetest.Options{CRDs: kubetest.BarmanCloudCRDs(t)})
	// A control plane, a PostgreSQL and two base backups: more than ctxT's two minutes on a
	// loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	o := runAs(t)
	dir := home(t, o)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	raw, err := os.ReadFile(k.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	o.writeFile(t, kubeconfig, raw, 0o600)

	def := func(uid string) []byte {
		return fmt.Appendf(nil, `{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster","metadata":{"name":"pgk","namespace":"default","uid":%q},`+
			`"spec":{"instances":1,"plugins":[{"name":%q,"isWALArchiver":true,"parameters":{"barmanObjectName":"store-k"}}]}}`, uid, pluginName)
	}
	const uid = "0b8f7a2e-5a43-4c8e-9d2e-6f1f0c3a9b71"
	clusterFile := filepath.Join(dir, "cluster.json")
	o.writeFile(t, clusterFile, def(uid), 0o644)

	pg, p, _ := archivingPostgresTo(t, "pgk-1", "-cluster-file="+clusterFile, []string{"PLINTH_CNPGI_KUBECONFIG=" + kubeconfig})
	admin := k.Client()
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-creds"},
		Data: map[string][]byte{"ACCESS_KEY_ID": []byte(p.s3.AccessKeyID), "ACCESS_SECRET_KEY": []byte(p.s3.SecretAccessKey)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var store unstructured.Unstructured
	store.Object = map[string]any{
		"apiVersion": "barmancloud.cnpg.io/v1", "kind": "ObjectStore",
		"metadata": map[string]any{"name": "store-k", "namespace": "default"},
		"spec": map[string]any{"configuration": map[string]any{
			"destinationPath": "s3://" + p.bucket + "/barman-users", "endpointURL": p.s3.Endpoint,
			"s3Credentials": map[string]any{
				"accessKeyId":     map[string]any{"name": "s3-creds", "key": "ACCESS_KEY_ID"},
				"secretAccessKey": map[string]any{"name": "s3-creds", "key": "ACCESS_SECRET_KEY"},
			},
			"wal": map[string]any{"compression": "gzip"},
		}},
	}
	api := k.Dynamic().Resource(objectStores).Namespace("default")
	if _, err := api.Create(ctx, &store, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// What CloudNativePG does first: the Pre hook, which grants the instances their Role.
	pre, err := reconciler.NewReconcilerHooksClient(p.conn).Pre(ctx, &reconciler.ReconcilerHooksRequest{ClusterDefinition: def(uid), ResourceDefinition: def(uid)})
	if err != nil || pre.GetBehavior() != reconciler.ReconcilerHooksResult_BEHAVIOR_CONTINUE {
		t.Fatalf("Pre: %v, %v\n%s", pre, err, p.logs.String())
	}
	role, err := admin.RbacV1().Roles("default").Get(ctx, "pgk-plinth-cnpgi", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the instances' Role: %v", err)
	}
	if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "secrets") && slices.Equal(r.ResourceNames, []string{"s3-creds"})
	}) {
		t.Errorf("the Role grants %+v, want get on Secret s3-creds", role.Rules)
	}

	// PostgreSQL archives through the ObjectStore: the segment lands under its destinationPath.
	exec1(t, ctx, pg.URL("postgres"), "CREATE TABLE t AS SELECT generate_series(1, 1000) AS i", "SELECT pg_switch_wal()")
	s3, err := objectstore.NewS3(objectstore.S3Options{Endpoint: p.s3.Endpoint, Bucket: p.bucket, PathStyle: true,
		AccessKeyID: p.s3.AccessKeyID, SecretAccessKey: p.s3.SecretAccessKey})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a WAL segment under the ObjectStore's destinationPath", func() bool {
		for obj, err := range s3.List(ctx, "barman-users/pgk/wals/") {
			return err == nil && strings.HasSuffix(obj.Key, ".gz")
		}
		return false
	}, p)

	res, err := backup.NewBackupClient(p.conn).Backup(ctx, &backup.BackupRequest{ClusterDefinition: def(uid), BackupDefinition: backupDefinition("k1")})
	if err != nil {
		t.Fatalf("backup: %v\n%s", err, p.logs.String())
	}
	if res.GetMetadata()["objectStore"] != "default/store-k" {
		t.Errorf("backup metadata %v", res.GetMetadata())
	}
	ended := time.Unix(res.GetStoppedAt(), 0).UTC().Format(time.RFC3339)
	window := func() map[string]string {
		u, err := api.Get(ctx, "store-k", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, _, _ := unstructured.NestedStringMap(u.Object, "status", "serverRecoveryWindow", "pgk")
		return w
	}
	if w := window(); w["firstRecoverabilityPoint"] != ended || w["lastSuccessfulBackupTime"] != ended || w["lastFailedBackupTime"] != "" {
		t.Errorf("status.serverRecoveryWindow.pgk after the backup = %v, want both times %s\n%s", w, ended, p.logs.String())
	}

	// A backup that fails (the ObjectStore's keys no longer work) records when.
	sec, err := admin.CoreV1().Secrets("default").Get(ctx, "s3-creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data["ACCESS_SECRET_KEY"] = []byte("revoked")
	if _, err := admin.CoreV1().Secrets("default").Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	time.Sleep(11 * time.Second) // the plugin reads an ObjectStore again after 10 s
	if _, err := backup.NewBackupClient(p.conn).Backup(ctx, &backup.BackupRequest{ClusterDefinition: def(uid), BackupDefinition: backupDefinition("k2")}); err == nil {
		t.Fatal("a backup with revoked keys succeeded")
	}
	w := window()
	failed, err := time.Parse(time.RFC3339, w["lastFailedBackupTime"])
	if err != nil || failed.Before(before.Truncate(time.Second)) || w["lastSuccessfulBackupTime"] != ended {
		t.Errorf("status.serverRecoveryWindow.pgk after a failed backup = %v (%v)", w, err)
	}
}

// waitUntil polls ok for up to a minute.
func waitUntil(t *testing.T, what string, ok func() bool, p *plugin) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s\n%s", what, p.logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
