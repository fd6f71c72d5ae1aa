package azureblob_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/storage/azuritetest"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/azureblob"
	"github.com/plinth-dev/plinth/libs/storage/secret"
)

func TestConfigValidate(t *testing.T) {
	acct, key := secret.Ref{Env: "ACCOUNT"}, secret.Ref{Env: "KEY"}
	cases := []struct {
		c    azureblob.Config
		want string
	}{
		{azureblob.Config{StorageAccount: acct, StorageKey: key}, "azure.container is required"},
		{azureblob.Config{Container: "Bad_Name", StorageAccount: acct, StorageKey: key}, "azure.container"},
		{azureblob.Config{Container: "pgarchive"}, "azure: one credential is required"},
		{azureblob.Config{Container: "pgarchive", StorageKey: key}, "azure.storageKey needs azure.storageAccount"},
		{azureblob.Config{Container: "pgarchive", StorageAccount: acct, StorageKey: key, StorageSasToken: key}, "one credential only"},
		{azureblob.Config{Container: "pgarchive", StorageSasToken: key}, "azure.storageSasToken needs azure.storageAccount or azure.endpoint"},
		{azureblob.Config{Container: "pgarchive", InheritFromAzureAD: true}, "azure.useDefaultAzureCredential needs"},
		{azureblob.Config{Container: "pgarchive", ConnectionString: key, Endpoint: "http://x"}, "leave azure.endpoint"},
		{azureblob.Config{Container: "pgarchive", StorageAccount: acct, StorageKey: key, Endpoint: "x.example.com"}, "azure.endpoint"},
		{azureblob.Config{Container: "pgarchive", StorageAccount: acct, StorageKey: key, BlockSizeMiB: 5000}, "azure.blockSizeMiB"},
		{azureblob.Config{Container: "pgarchive", StorageAccount: acct, StorageKey: key, Concurrency: 65}, "azure.concurrency"},
	}
	for _, c := range cases {
		if err := c.c.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.c, err, c.want)
		}
	}
	for _, ok := range []azureblob.Config{
		{Container: "pgarchive", StorageAccount: acct, StorageKey: key},
		{Container: "pgarchive", ConnectionString: key},
		{Container: "pgarchive", Endpoint: "https://acct.blob.core.windows.net", StorageSasToken: key},
		{Container: "pgarchive", StorageAccount: acct, UseDefaultAzureCredential: true, BlockSizeMiB: 4, Concurrency: 8},
	} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

func TestConfigResolvesSecretsWithoutRevealingThem(t *testing.T) {
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("ZmlsZS1zZWNyZXQtdmFsdWU=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := azureblob.Config{Container: "pgarchive", StorageAccount: secret.Ref{Env: "ACCOUNT"}, StorageKey: secret.Ref{File: file}, BlockSizeMiB: 8}
	o, err := c.Options("pre/fix", map[string]string{"ACCOUNT": "acct"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Account != "acct" || o.AccountKey != "ZmlsZS1zZWNyZXQtdmFsdWU=" || o.BlockSize != 8<<20 || o.Prefix != "pre/fix" || o.Container != "pgarchive" {
		t.Fatalf("options %+v", o)
	}
	if _, err := c.Options("", nil); err == nil || !strings.Contains(err.Error(), "azure.storageAccount: environment variable ACCOUNT is not set") {
		t.Fatalf("missing env: %v", err)
	}
	c.StorageKey = secret.Ref{File: filepath.Join(t.TempDir(), "none")}
	if _, err := c.Options("", map[string]string{"ACCOUNT": "acct"}); err == nil || !strings.Contains(err.Error(), "azure.storageKey") {
		t.Fatalf("missing key file: %v", err)
	}
	// A resolved value that the SDK refuses: the error names the field, not the value.
	bad := azureblob.Config{Container: "pgarchive", ConnectionString: secret.Ref{Env: "CS"}}
	o, err = bad.Options("", map[string]string{"CS": "AccountKey=secret-in-a-connection-string"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := azureblob.New(o); err == nil || strings.Contains(err.Error(), "secret-in") {
		t.Fatalf("a broken connection string: %v", err)
	}
}

// TestConfigAgainstAzurite goes from the file form to a working store, as a service would:
// the connection string comes from the environment, as barman-cloud reads it.
func TestConfigAgainstAzurite(t *testing.T) {
	t.Parallel() // each test runs an Azurite of its own
	srv := azuritetest.Start(t)
	c := azureblob.Config{Container: srv.Container(t), ConnectionString: secret.Ref{Env: "AZURE_STORAGE_CONNECTION_STRING"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	o, err := c.Options("pg/main", map[string]string{"AZURE_STORAGE_CONNECTION_STRING": srv.ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := azureblob.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctxT(t), "k", strings.NewReader("v"), objectstore.PutOptions{Size: 1, IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	if info, err := st.Stat(ctxT(t), "k"); err != nil || info.Size != 1 {
		t.Fatalf("stat: %+v %v", info, err)
	}
}
