package stores_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/storage/azuritetest"
	"github.com/plinth-dev/plinth/libs/storage/gcstest"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/azureblob"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/gcs"
	"github.com/plinth-dev/plinth/libs/storage/s3test"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

// barmanObjectStore is an ObjectStore as plugin-barman-cloud's documentation writes one.
func barmanObjectStore(destination, endpoint, extra string) []byte {
	return fmt.Appendf(nil, `{
	"apiVersion": "barmancloud.cnpg.io/v1", "kind": "ObjectStore",
	"metadata": {"name": "minio-store", "namespace": "team-a", "resourceVersion": "7"},
	"spec": {
		"configuration": {
			"destinationPath": %q,
			"endpointURL": %q,
			"s3Credentials": {
				"accessKeyId": {"name": "minio", "key": "ACCESS_KEY_ID"},
				"secretAccessKey": {"name": "minio", "key": "ACCESS_SECRET_KEY"}
			},
			"wal": {"compression": "bzip2", "maxParallel": 4}%s
		},
		"retentionPolicy": "30d"
	}
}`, destination, endpoint, extra)
}

func secretsOf(m map[string]map[string][]byte) stores.Secrets {
	return func(name string) (map[string][]byte, bool, error) {
		d, ok := m[name]
		return d, ok, nil
	}
}

// TestObjectStoreResourceWorksAsBarmanCloudsDoes: a barman-cloud user's ObjectStore, with its
// credentials in a Secret, opens a store that reads and writes their bucket below the
// destinationPath — against a real S3 server.
func TestObjectStoreResourceWorksAsBarmanCloudsDoes(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.Bucket(t)
	obj, err := stores.ParseObjectStore(barmanObjectStore("s3://"+bucket+"/pg/backups", srv.Endpoint, ""))
	if err != nil {
		t.Fatal(err)
	}
	secrets := secretsOf(map[string]map[string][]byte{"minio": {
		"ACCESS_KEY_ID": []byte(srv.AccessKeyID), "ACCESS_SECRET_KEY": []byte(srv.SecretAccessKey + "\n"),
	}})
	n, err := stores.OpenObjectStore(obj, secrets)
	if err != nil {
		t.Fatal(err)
	}
	if n.Name != "team-a/minio-store" || n.Kind != "s3" || n.WAL.MaxParallel != 4 || n.WAL.Compression != "gzip" {
		t.Errorf("store %q kind %s wal %+v; want team-a/minio-store, s3, 4 in parallel, bzip2 written as gzip", n.Name, n.Kind, n.WAL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.Store.Put(ctx, "pg-main/wals/x", strings.NewReader("wal"), objectstore.PutOptions{Size: 3, IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	// barman's layout: destinationPath/serverName/wals/..., so the path is the prefix.
	raw, err := objectstore.NewS3(objectstore.S3Options{Endpoint: srv.Endpoint, Bucket: bucket, PathStyle: true,
		AccessKeyID: srv.AccessKeyID, SecretAccessKey: srv.SecretAccessKey})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := raw.Get(ctx, "pg/backups/pg-main/wals/x")
	if err != nil {
		t.Fatalf("the object is not under the destinationPath: %v", err)
	}
	b, _ := io.ReadAll(r)
	_ = r.Close()
	if string(b) != "wal" {
		t.Errorf("read %q", b)
	}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("store", "store", n)
	if strings.Contains(logs.String(), srv.SecretAccessKey) || !strings.Contains(logs.String(), "team-a/minio-store") {
		t.Errorf("the store's log line: %s", logs.String())
	}
}

// TestObjectStoreResourceMistakes: each mistake is said with the field to fix, all at once,
// and never with a secret's value.
func TestObjectStoreResourceMistakes(t *testing.T) {
	const secretValue = "s3cr3t-value-never-shown"
	full := map[string]map[string][]byte{"minio": {"ACCESS_KEY_ID": []byte("AK"), "ACCESS_SECRET_KEY": []byte(secretValue)}}
	cases := []struct {
		name, dest, extra string
		secrets           map[string]map[string][]byte
		want              []string
	}{
		{"no Secret", "s3://b/p", "", nil, []string{"spec.configuration.s3Credentials.accessKeyId: Secret \"minio\" does not exist in namespace \"team-a\"",
			"spec.configuration.s3Credentials.secretAccessKey"}},
		{"no key", "s3://b/p", "", map[string]map[string][]byte{"minio": {"ACCESS_KEY_ID": []byte("AK")}},
			[]string{`spec.configuration.s3Credentials.secretAccessKey: Secret "minio" has no key "ACCESS_SECRET_KEY"`}},
		{"serverName in the store", "s3://b/p", `, "serverName": "x"`, full, []string{"spec.configuration.serverName: use the serverName plugin parameter"}},
		{"not a URL", "bucket/path", "", full, []string{"spec.configuration.destinationPath: \"bucket/path\" is not a URL"}},
		{"unknown scheme", "ftp://h/p", "", full, []string{`spec.configuration.destinationPath: scheme "ftp"`}},
		{"server-side encryption", "s3://b/p", `, "data": {"encryption": "aws:kms"}`, full, []string{"spec.configuration.data.encryption"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj, err := stores.ParseObjectStore(barmanObjectStore(c.dest, "http://127.0.0.1:1", c.extra))
			if err != nil {
				t.Fatal(err)
			}
			_, err = stores.OpenObjectStore(obj, secretsOf(c.secrets))
			if err == nil {
				t.Fatal("opened")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secretValue) {
				t.Errorf("a secret's value in the error: %v", err)
			}
		})
	}
	if _, err := stores.ParseObjectStore([]byte(`{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster"}`)); err == nil {
		t.Error("a Cluster parsed as an ObjectStore")
	}
}

// TestObjectStoreResourceOnEveryCloud: barman-cloud's destinationPath forms for Google Cloud
// Storage (gs://BUCKET/PATH) and Azure (emulated: http://HOST:PORT/ACCOUNT/CONTAINER/PATH,
// which needs a connection string, as barman-cloud says) open stores that write below PATH —
// against fake-gcs-server and Azurite, the emulators barman-cloud's CI uses.
func TestObjectStoreResourceOnEveryCloud(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gsrv := gcstest.Start(t)
	gbucket := gsrv.Bucket(t)
	asrv := azuritetest.Start(t)
	acontainer := asrv.Container(t)
	cases := []struct {
		name, configuration string
		secrets             map[string]map[string][]byte
		kind                string
		raw                 objectstore.Store
	}{
		{
			name:          "gcs emulator",
			configuration: fmt.Sprintf(`{"destinationPath": "gs://%s/pg/backups", "endpointURL": %q}`, gbucket, gsrv.Endpoint),
			kind:          "gcs",
			raw:           must(gcs.New(ctx, gcs.Options{Endpoint: gsrv.Endpoint, Bucket: gbucket})),
		},
		{
			name: "azure emulator",
			configuration: fmt.Sprintf(`{"destinationPath": "http://%s/%s/%s/pg/backups",
				"azureCredentials": {"connectionString": {"name": "azure", "key": "AZURE_CONNECTION_STRING"}}}`,
				strings.TrimPrefix(strings.TrimSuffix(asrv.Endpoint, "/"+asrv.Account), "http://"), asrv.Account, acontainer),
			secrets: map[string]map[string][]byte{"azure": {"AZURE_CONNECTION_STRING": []byte(asrv.ConnectionString())}},
			kind:    "azure",
			raw:     must(azureblob.New(azureblob.Options{ConnectionString: asrv.ConnectionString(), Container: acontainer})),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj, err := stores.ParseObjectStore(fmt.Appendf(nil, `{"apiVersion": "barmancloud.cnpg.io/v1", "kind": "ObjectStore",
				"metadata": {"name": "store", "namespace": "team-a"}, "spec": {"configuration": %s}}`, c.configuration))
			if err != nil {
				t.Fatal(err)
			}
			n, err := stores.OpenObjectStore(obj, secretsOf(c.secrets))
			if err != nil {
				t.Fatal(err)
			}
			if n.Kind != c.kind {
				t.Errorf("kind %s, want %s", n.Kind, c.kind)
			}
			if err := n.Store.Put(ctx, "pg-main/wals/x", strings.NewReader("wal"), objectstore.PutOptions{Size: 3, IfAbsent: true}); err != nil {
				t.Fatal(err)
			}
			r, _, err := c.raw.Get(ctx, "pg/backups/pg-main/wals/x")
			if err != nil {
				t.Fatalf("the object is not below the destinationPath: %v", err)
			}
			_ = r.Close()
		})
	}
	t.Run("azure emulator without a connection string", func(t *testing.T) {
		obj, err := stores.ParseObjectStore([]byte(`{"apiVersion": "barmancloud.cnpg.io/v1", "kind": "ObjectStore",
			"metadata": {"name": "store", "namespace": "team-a"}, "spec": {"configuration": {"destinationPath": "http://azurite:10000/devstoreaccount1/c/p",
			"azureCredentials": {"storageAccount": {"name": "a", "key": "k"}, "storageKey": {"name": "a", "key": "k"}}}}}`))
		if err != nil {
			t.Fatal(err)
		}
		_, err = stores.OpenObjectStore(obj, secretsOf(map[string]map[string][]byte{"a": {"k": []byte("v")}}))
		if err == nil || !strings.Contains(err.Error(), "spec.configuration.azureCredentials.connectionString: is required with an emulated Azure URL") {
			t.Errorf("emulated Azure with a storage key: %v", err)
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
