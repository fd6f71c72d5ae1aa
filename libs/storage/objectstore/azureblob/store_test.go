package azureblob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/storage/azuritetest"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/azureblob"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/storetest"
)

// azureStore returns a factory of fresh stores, each in a new container of srv; 1 MiB
// blocks, so that the suite's unsized bodies are staged as many blocks.
func azureStore(srv *azuritetest.Server, prefix string) func(t *testing.T) objectstore.Store {
	return func(t *testing.T) objectstore.Store {
		st, err := azureblob.New(azureblob.Options{
			Endpoint: srv.Endpoint, Account: srv.Account, AccountKey: srv.AccountKey,
			Container: srv.Container(t), Prefix: prefix, BlockSize: azureblob.MinBlockSize, Concurrency: 3,
		})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}

// TestConformance runs the suite every store passes against a real Azurite.
func TestConformance(t *testing.T) {
	t.Parallel() // each test runs an Azurite of its own
	srv := azuritetest.Start(t)
	storetest.Suite(t, azureStore(srv, ""))
	t.Run("with-prefix", func(t *testing.T) { storetest.Suite(t, azureStore(srv, "clusters/prod")) })
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestCredentialForms reads and writes through each way of authenticating that works
// against Azurite: shared key, connection string, SAS token.
func TestCredentialForms(t *testing.T) {
	t.Parallel() // each test runs an Azurite of its own
	srv := azuritetest.Start(t)
	name := srv.Container(t)
	sas := srv.ContainerSAS(t, name)
	forms := map[string]azureblob.Options{
		"shared key":        {Endpoint: srv.Endpoint, Account: srv.Account, AccountKey: srv.AccountKey},
		"connection string": {ConnectionString: srv.ConnectionString()},
		"sas token":         {Endpoint: srv.Endpoint, SASToken: "?" + sas},
		"sas token bare":    {Endpoint: srv.Endpoint, SASToken: sas},
	}
	for form, o := range forms {
		t.Run(form, func(t *testing.T) {
			o.Container, o.Prefix = name, strings.ReplaceAll(form, " ", "-")
			st, err := azureblob.New(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Put(ctxT(t), "k", strings.NewReader("v"), objectstore.PutOptions{Size: 1}); err != nil {
				t.Fatal(err)
			}
			var keys []string
			for info, err := range st.List(ctxT(t), "") {
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, info.Key)
			}
			if len(keys) != 1 || keys[0] != "k" {
				t.Fatalf("listed %v", keys)
			}
			if err := st.Delete(ctxT(t), "k"); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			slog.New(slog.NewJSONHandler(&logs, nil)).Info("store", "store", st, "options", o)
			for _, secret := range []string{srv.AccountKey, sas} {
				if strings.Contains(logs.String(), secret) {
					t.Fatalf("a credential in the log: %s", logs.String())
				}
			}
		})
	}
}

func TestErrorsSayWhatIsWrong(t *testing.T) {
	t.Parallel() // each test runs an Azurite of its own
	srv := azuritetest.Start(t)
	name := srv.Container(t)
	open := func(container, key string) objectstore.Store {
		st, err := azureblob.New(azureblob.Options{Endpoint: srv.Endpoint, Account: srv.Account, AccountKey: key, Container: container})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	wrongKey := "d3Jvbmcta2V5LXZhbHVlLWZvci10aGUtdGVzdA==" // base64 of "wrong-key-value-for-the-test"
	_, err := open(name, wrongKey).Stat(ctxT(t), "x")
	if !errors.Is(err, objectstore.ErrDenied) || strings.Contains(err.Error(), wrongKey) {
		t.Fatalf("wrong key, stat: %v, want ErrDenied without the key", err)
	}
	err = open(name, wrongKey).Put(ctxT(t), "x", strings.NewReader("x"), objectstore.PutOptions{Size: 1})
	if !errors.Is(err, objectstore.ErrDenied) || errors.Is(err, objectstore.ErrExists) {
		t.Fatalf("wrong key, put: %v, want ErrDenied", err)
	}
	for _, err := range open(name, wrongKey).List(ctxT(t), "") {
		if !errors.Is(err, objectstore.ErrDenied) {
			t.Fatalf("wrong key, list: %v, want ErrDenied", err)
		}
	}
	missing := open("no-such-container", srv.AccountKey)
	err = missing.Put(ctxT(t), "x", strings.NewReader("x"), objectstore.PutOptions{Size: 1})
	if !errors.Is(err, objectstore.ErrBucketMissing) {
		t.Fatalf("missing container, put: %v, want ErrBucketMissing", err)
	}
	if _, err := missing.Stat(ctxT(t), "x"); !errors.Is(err, objectstore.ErrBucketMissing) {
		t.Fatalf("missing container, stat: %v, want ErrBucketMissing", err)
	}
	if err := missing.Delete(ctxT(t), "x"); !errors.Is(err, objectstore.ErrBucketMissing) {
		t.Fatalf("missing container, delete: %v, want ErrBucketMissing", err)
	}
	err = missing.Put(ctxT(t), "x", strings.NewReader(strings.Repeat("x", 3<<20)), objectstore.PutOptions{Size: -1})
	if !errors.Is(err, objectstore.ErrBucketMissing) {
		t.Fatalf("missing container, staged put: %v, want ErrBucketMissing", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := open(name, srv.AccountKey).Stat(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled context: %v, want context.Canceled", err)
	}
}

// TestDefaultCredentialWithoutAzureAD: the default chain finds no identity on a test
// machine; the store must say so promptly, not hang or pretend the blob is missing.
func TestDefaultCredentialWithoutAzureAD(t *testing.T) {
	srv := azuritetest.Start(t)
	for _, v := range []string{"AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE",
		"AZURE_USERNAME", "IDENTITY_ENDPOINT", "MSI_ENDPOINT", "AZURE_TOKEN_CREDENTIALS"} {
		t.Setenv(v, "") // restored when the test ends
		_ = os.Unsetenv(v)
	}
	st, err := azureblob.New(azureblob.Options{Endpoint: srv.Endpoint, Container: srv.Container(t), DefaultCredential: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	_, err = st.Stat(ctx, "x")
	if err == nil || errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("stat without Azure AD: %v, want an authentication error", err)
	}
	if !strings.Contains(err.Error(), "default Azure credential") || !errors.Is(err, objectstore.ErrDenied) {
		t.Fatalf("the error does not say which credential failed: %v", err)
	}
	t.Logf("failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if ctx.Err() != nil {
		t.Fatalf("the default credential ran until the context's deadline: %v", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	const key = "c2VjcmV0LWtleS12YWx1ZQ==" // base64 of "secret-key-value"
	ok := azureblob.Options{Account: "acct", AccountKey: key, Container: "pgarchive"}
	cases := []struct {
		mod  func(o *azureblob.Options)
		want string
	}{
		{func(o *azureblob.Options) { o.Container = "" }, "container is required"},
		{func(o *azureblob.Options) { o.Container = "Bad_Name" }, "container"},
		{func(o *azureblob.Options) { o.AccountKey = "" }, "a credential is required"},
		{func(o *azureblob.Options) { o.SASToken = "sv=1&sig=secret-sas" }, "one credential only"},
		{func(o *azureblob.Options) { o.Account = "" }, "account's name"},
		{func(o *azureblob.Options) { o.Account = "Not-An-Account" }, "account"},
		{func(o *azureblob.Options) { o.Endpoint = "ftp://x" }, "endpoint"},
		{func(o *azureblob.Options) { o.Endpoint = "https://x/?sig=secret-sas" }, "endpoint"},
		{func(o *azureblob.Options) { o.BlockSize = 1000 }, "block size"},
		{func(o *azureblob.Options) { o.Concurrency = 1000 }, "concurrency"},
		{func(o *azureblob.Options) { o.Prefix = "a//b" }, "prefix"},
		{func(o *azureblob.Options) { o.AccountKey = "not base64 secret-key-value!" }, "account key"},
		{func(o *azureblob.Options) {
			o.AccountKey, o.Account, o.ConnectionString = "", "", "AccountKey=secret-key-value"
		}, "connection string"},
		{func(o *azureblob.Options) { o.AccountKey, o.ConnectionString = "", "BlobEndpoint=http://x;" }, "leave endpoint and account empty"},
	}
	for i, c := range cases {
		o := ok
		c.mod(&o)
		_, err := azureblob.New(o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: %v, want %q", i, err, c.want)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("case %d: the error shows a credential: %v", i, err)
		}
	}
	st, err := azureblob.New(ok)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("opened", "store", st)
	if !strings.Contains(logs.String(), "https://acct.blob.core.windows.net") || strings.Contains(logs.String(), key) {
		t.Fatalf("log: %s", logs.String())
	}
}

// TestSASNeverInErrors: a SAS token travels in every request's URL, which transport errors
// quote; the store's errors must not.
func TestSASNeverInErrors(t *testing.T) {
	t.Parallel() // each test runs an Azurite of its own
	const token = "sv=2023-11-03&sr=c&sp=rl&sig=c2VjcmV0LXNhcy1zaWduYXR1cmU%3D"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now: every request fails in the transport
	st, err := azureblob.New(azureblob.Options{Endpoint: "http://" + addr + "/acct", SASToken: token, Container: "pgarchive"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err = st.Stat(ctx, "x")
	if err == nil || strings.Contains(err.Error(), "sig=") || strings.Contains(err.Error(), "c2VjcmV0") {
		t.Fatalf("unreachable endpoint with a SAS token: %v", err)
	}
	srv := azuritetest.Start(t)
	name := srv.Container(t)
	wrong := strings.Replace(srv.ContainerSAS(t, name), "sig=", "sig=AAAA", 1)
	st, err = azureblob.New(azureblob.Options{Endpoint: srv.Endpoint, SASToken: wrong, Container: name})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Stat(ctxT(t), "x")
	if !errors.Is(err, objectstore.ErrDenied) || strings.Contains(err.Error(), "sig=") {
		t.Fatalf("a forged SAS: %v, want ErrDenied without the token", err)
	}
}

// TestConcurrentStagedIfAbsent races writers whose bodies are staged as blocks: the
// condition on Put Block List must leave one winner and tell the others ErrExists (not a
// block list error), and the stored blob must be the winner's whole body.
func TestConcurrentStagedIfAbsent(t *testing.T) {
	t.Parallel() // each test runs an Azurite of its own
	srv := azuritetest.Start(t)
	st := azureStore(srv, "")(t)
	bodies := make([][]byte, 4)
	errs := make([]error, len(bodies))
	var wg sync.WaitGroup
	for i := range bodies {
		bodies[i] = bytes.Repeat([]byte{byte('a' + i)}, 3<<20+i)
		wg.Go(func() {
			errs[i] = st.Put(ctxT(t), "race/staged", io.MultiReader(bytes.NewReader(bodies[i])), objectstore.PutOptions{Size: -1, IfAbsent: true})
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			t.Fatalf("writers %d and %d both won", winner, i)
		case !errors.Is(err, objectstore.ErrExists):
			t.Fatalf("writer %d: %v, want ErrExists", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer won")
	}
	r, _, err := st.Get(ctxT(t), "race/staged")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, _ := io.ReadAll(r); !bytes.Equal(got, bodies[winner]) {
		t.Fatalf("stored %d bytes, not writer %d's body", len(got), winner)
	}
}
