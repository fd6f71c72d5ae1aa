package kube_test

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/libs/kubetest"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/s3test"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/kube"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

// shippedClusterRole is the operator side's ClusterRole as deploy/k8s ships it.
func shippedClusterRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile("../../../../deploy/k8s/base/cnpgi-plugin/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for doc := range bytes.SplitSeq(data, []byte("\n---\n")) {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal(doc, &role); err != nil {
			t.Fatal(err)
		}
		if role.Kind == "ClusterRole" {
			return &role
		}
	}
	t.Fatal("rbac.yaml has no ClusterRole")
	return nil
}

// as is the cluster's admin configuration acting as a service account, whose RBAC the
// apiserver then enforces.
func as(c *kubetest.Cluster, namespace, name string) *rest.Config {
	cfg := c.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + name}
	return cfg
}

// TestInstancesGetExactlyTheirObjectStores runs on a real kube-apiserver (RBAC enforced) with
// plugin-barman-cloud's CRD, the plugin's operator acting as its own service account bound to
// the ClusterRole deploy/k8s ships: it grants Cluster pg-a's instances their ObjectStore,
// and pg-a's service account — what its sidecars run as — then reads that ObjectStore and its
// Secret and writes its recovery window, but nothing else: not the other ObjectStore of the
// namespace, not another Secret, not another status. A Secret added to the ObjectStore is
// granted on the next reconciliation; a missing ObjectStore is refused with its name.
func TestInstancesGetExactlyTheirObjectStores(t *testing.T) {
	srv := s3test.Start(t)
	c := kubetest.Start(t, kubetest.Options{CRDs: kubetest.BarmanCloudCRDs(t)})
	ctx := ctxT(t)
	admin := c.Client()
	for _, ns := range []string{"plinth", "team-a"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	role := shippedClusterRole(t)
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "cnpgi-plugin", Namespace: "plinth"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]map[string][]byte{
		"minio":   {"ACCESS_KEY_ID": []byte(srv.AccessKeyID), "ACCESS_SECRET_KEY": []byte(srv.SecretAccessKey)},
		"other":   {"ACCESS_KEY_ID": []byte(srv.AccessKeyID), "ACCESS_SECRET_KEY": []byte(srv.SecretAccessKey)},
		"app-db":  {"password": []byte("not-for-postgres-sidecars")},
		"rotated": {"ACCESS_KEY_ID": []byte(srv.AccessKeyID), "ACCESS_SECRET_KEY": []byte(srv.SecretAccessKey)},
	} {
		if _, err := admin.CoreV1().Secrets("team-a").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bucket := srv.Bucket(t)
	api := c.Dynamic().Resource(kube.ObjectStoreResource).Namespace("team-a")
	for name, secret := range map[string]string{"store-a": "minio", "store-b": "other"} {
		if _, err := api.Create(ctx, objectStore(t, "team-a", name, "s3://"+bucket+"/"+name, srv.Endpoint, secret), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	operator, err := kube.NewObjectStores(kube.Options{REST: as(c, "plinth", "cnpgi-plugin"), Fresh: time.Nanosecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := operator.GrantInstances(ctx, "team-a", "pg-a", "4d7f3c0e-9c1b-4d8e-a3f5-2b6c8e1d0f42", []string{"store-a"}); err != nil {
		t.Fatalf("granting pg-a's instances: %v", err)
	}
	got, err := admin.RbacV1().Roles("team-a").Get(ctx, kube.RBACName("pg-a"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o := got.OwnerReferences; len(o) != 1 || o[0].Kind != "Cluster" || o[0].Name != "pg-a" || o[0].Controller == nil || !*o[0].Controller {
		t.Errorf("the Role's owner: %+v", o)
	}

	sidecarCfg := as(c, "team-a", "pg-a")
	sidecar, err := kube.NewObjectStores(kube.Options{REST: sidecarCfg, Fresh: time.Nanosecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := stores.Open(&stores.File{Stores: map[string]stores.StoreConfig{"local": {POSIX: &objectstore.POSIXConfig{Path: t.TempDir()}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg.SetObjectStores(sidecar)
	st, err := reg.Lookup(ctx, "team-a", "store-a", "")
	if err != nil {
		t.Fatalf("pg-a's sidecar reading its ObjectStore: %v", err)
	}
	if err := st.Store.Put(ctx, "pg-a/wals/x", strings.NewReader("1"), objectstore.PutOptions{Size: 1, IfAbsent: true}); err != nil {
		t.Fatal(err)
	}

	// The recovery window, written as the sidecar, and read back as barman-cloud's users do.
	first, last := time.Date(2026, 12, 1, 3, 0, 7, 0, time.UTC), time.Date(2026, 12, 6, 3, 0, 9, 500, time.UTC)
	windows := reg.RecoveryWindows()
	if windows == nil {
		t.Fatal("a registry reading ObjectStores from the API has no recovery window writer")
	}
	if err := windows.UpdateRecoveryWindow(ctx, "team-a", "store-a", "pg-a", func(w *stores.RecoveryWindow) {
		w.FirstRecoverabilityPoint, w.LastSuccessfulBackupTime = stores.At(first), stores.At(last)
	}); err != nil {
		t.Fatalf("pg-a's sidecar writing the recovery window: %v", err)
	}
	failed := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	if err := windows.UpdateRecoveryWindow(ctx, "team-a", "store-a", "pg-a", func(w *stores.RecoveryWindow) {
		w.LastFailedBackupTime = stores.At(failed)
	}); err != nil {
		t.Fatal(err)
	}
	u, err := api.Get(ctx, "store-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	entry, _, _ := unstructured.NestedStringMap(u.Object, "status", "serverRecoveryWindow", "pg-a")
	want := map[string]string{
		"firstRecoverabilityPoint": "2026-12-01T03:00:07Z",
		"lastSuccessfulBackupTime": "2026-12-06T03:00:09Z",
		"lastFailedBackupTime":     "2026-12-06T04:00:00Z",
	}
	for k, v := range want {
		if entry[k] != v {
			t.Errorf("status.serverRecoveryWindow.pg-a.%s = %q, want %q (entry %v)", k, entry[k], v, entry)
		}
	}

	// The attacker's view: pg-a's service account, used directly, reaches nothing else.
	direct := kubernetes.NewForConfigOrDie(sidecarCfg)
	for _, name := range []string{"other", "app-db"} {
		if _, err := direct.CoreV1().Secrets("team-a").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("pg-a's service account reading Secret %s: %v, want forbidden", name, err)
		}
	}
	if _, err := direct.CoreV1().Secrets("team-a").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("pg-a's service account listing Secrets: %v, want forbidden", err)
	}
	if _, err := reg.Lookup(ctx, "team-a", "store-b", ""); !errors.Is(err, stores.ErrUnknownStore) || !strings.Contains(err.Error(), "may not read") {
		t.Errorf("pg-a's sidecar reading store-b: %v", err)
	}
	if err := windows.UpdateRecoveryWindow(ctx, "team-a", "store-b", "pg-a", func(w *stores.RecoveryWindow) {
		w.LastFailedBackupTime = stores.At(failed)
	}); err == nil || !strings.Contains(err.Error(), "store-b") {
		t.Errorf("pg-a's sidecar writing store-b's status: %v", err)
	}
	if _, err := direct.RbacV1().Roles("team-a").Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("pg-a's service account changing its own Role: %v, want forbidden", err)
	}

	// The ObjectStore now names another Secret: granted on the next reconciliation.
	cur, err := api.Get(ctx, "store-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(cur.Object, "rotated", "spec", "configuration", "s3Credentials", "secretAccessKey", "name")
	if _, err := api.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := operator.GrantInstances(ctx, "team-a", "pg-a", "4d7f3c0e-9c1b-4d8e-a3f5-2b6c8e1d0f42", []string{"store-a"}); err != nil {
		t.Fatal(err)
	}
	got, err = admin.RbacV1().Roles("team-a").Get(ctx, kube.RBACName("pg-a"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var secrets []string
	for _, r := range got.Rules {
		if slices.Contains(r.Resources, "secrets") {
			secrets = r.ResourceNames
		}
	}
	if !slices.Equal(secrets, []string{"minio", "rotated"}) {
		t.Errorf("Secrets granted after the change: %v, want [minio rotated]", secrets)
	}
	if _, err := reg.Lookup(ctx, "team-a", "store-a", ""); err != nil {
		t.Errorf("pg-a's sidecar after the Secret changed: %v", err)
	}

	// A Cluster naming an ObjectStore that does not exist gets no Role, and the reason.
	err = operator.GrantInstances(ctx, "team-a", "pg-c", "", []string{"missing"})
	if !errors.Is(err, stores.ErrUnknownStore) || !strings.Contains(err.Error(), `ObjectStore "missing" in namespace "team-a" does not exist`) {
		t.Errorf("granting a missing ObjectStore: %v", err)
	}
	if _, err := admin.RbacV1().Roles("team-a").Get(ctx, kube.RBACName("pg-c"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Role for pg-c: %v", err)
	}
}
