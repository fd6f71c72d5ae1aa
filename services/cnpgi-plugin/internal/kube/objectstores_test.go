package kube_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/json"

	"github.com/plinth-dev/plinth/libs/kubetest"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/s3test"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/kube"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// objectStore is a barman-cloud user's ObjectStore manifest.
func objectStore(t *testing.T, namespace, name, destination, endpoint, secret string) *unstructured.Unstructured {
	t.Helper()
	var u unstructured.Unstructured
	manifest := fmt.Sprintf(`{"apiVersion":"barmancloud.cnpg.io/v1","kind":"ObjectStore",
		"metadata":{"name":%q,"namespace":%q},
		"spec":{"configuration":{"destinationPath":%q,"endpointURL":%q,
			"s3Credentials":{"accessKeyId":{"name":%q,"key":"ACCESS_KEY_ID"},"secretAccessKey":{"name":%q,"key":"ACCESS_SECRET_KEY"}},
			"wal":{"compression":"gzip","maxParallel":2}}}}`, name, namespace, destination, endpoint, secret, secret)
	if err := json.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	return &u
}

// TestObjectStoresFromTheAPI runs against a real kube-apiserver with plugin-barman-cloud's own
// CRD: an ObjectStore and its Secret become a working store; a change of either is seen
// without a restart; a deleted one is gone; another namespace's is not reachable by name; a
// missing Secret is said with the field.
func TestObjectStoresFromTheAPI(t *testing.T) {
	srv := s3test.Start(t)
	c := kubetest.Start(t, kubetest.Options{CRDs: kubetest.BarmanCloudCRDs(t)})
	ctx := ctxT(t)
	for _, ns := range []string{"team-a", "team-b"} {
		if _, err := c.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secrets := c.Client().CoreV1().Secrets("team-a")
	if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "minio"},
		Data: map[string][]byte{"ACCESS_KEY_ID": []byte(srv.AccessKeyID), "ACCESS_SECRET_KEY": []byte(srv.SecretAccessKey)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first, second := srv.Bucket(t), srv.Bucket(t)
	api := c.Dynamic().Resource(kube.ObjectStoreResource).Namespace("team-a")
	if _, err := api.Create(ctx, objectStore(t, "team-a", "minio-store", "s3://"+first+"/pg", srv.Endpoint, "minio"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	src, err := kube.NewObjectStores(kube.Options{REST: c.Config(), Fresh: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := stores.Open(&stores.File{Stores: map[string]stores.StoreConfig{"local": {POSIX: &objectstore.POSIXConfig{Path: t.TempDir()}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg.SetObjectStores(src)

	st, err := reg.Lookup(ctx, "team-a", "minio-store", "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "team-a/minio-store" || st.WAL.MaxParallel != 2 {
		t.Errorf("store %s, wal %+v", st.Name, st.WAL)
	}
	if err := st.Store.Put(ctx, "pg-1/wals/a", strings.NewReader("1"), objectstore.PutOptions{Size: 1, IfAbsent: true}); err != nil {
		t.Fatalf("writing through the ObjectStore's store: %v", err)
	}

	// A change (another bucket) is used without a restart.
	cur, err := api.Get(ctx, "minio-store", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(cur.Object, "s3://"+second+"/pg", "spec", "configuration", "destinationPath"); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the changed ObjectStore", func() bool {
		st, err := reg.Lookup(ctx, "team-a", "minio-store", "")
		if err != nil {
			return false
		}
		_, err = st.Store.Stat(ctx, "pg-1/wals/a") // not in the second bucket
		return errors.Is(err, objectstore.ErrNotFound)
	})

	// A rotated key in the Secret is used too: a wrong one is refused by the store.
	sec, err := secrets.Get(ctx, "minio", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data["ACCESS_SECRET_KEY"] = []byte("wrong-secret-key")
	if _, err := secrets.Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rotated Secret", func() bool {
		st, err := reg.Lookup(ctx, "team-a", "minio-store", "")
		if err != nil {
			return false
		}
		_, err = st.Store.Stat(ctx, "pg-1/wals/a")
		return errors.Is(err, objectstore.ErrDenied)
	})

	// Another namespace's ObjectStore is not found from team-b, whatever the name says.
	if _, err := reg.Lookup(ctx, "team-b", "minio-store", ""); !errors.Is(err, stores.ErrUnknownStore) ||
		!strings.Contains(err.Error(), `ObjectStore "minio-store" in namespace "team-b" does not exist`) {
		t.Errorf("team-a's ObjectStore from team-b: %v", err)
	}

	// A missing Secret is a mistake named by field.
	if _, err := api.Create(ctx, objectStore(t, "team-a", "no-secret", "s3://"+first+"/x", srv.Endpoint, "absent"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var bad *stores.InvalidObjectStoreError
	if _, err := reg.Lookup(ctx, "team-a", "no-secret", ""); !errors.As(err, &bad) ||
		!strings.Contains(err.Error(), `spec.configuration.s3Credentials.accessKeyId: Secret "absent" does not exist`) {
		t.Errorf("missing Secret: %v", err)
	}

	// Deleted: gone once the freshness ran out.
	if err := api.Delete(ctx, "minio-store", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted ObjectStore to be gone", func() bool {
		_, err := reg.Lookup(ctx, "team-a", "minio-store", "")
		return errors.Is(err, stores.ErrUnknownStore)
	})
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
