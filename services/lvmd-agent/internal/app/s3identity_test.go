package app_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/app"
)

// TestDefaultS3StoreNeverThroughACallersProxy (issue #36, "lvmd-agent's default S3 store
// follows a caller's proxy, with its signed requests and the default access key id"): an
// operator's backup or restore that names only a path plus a proxy, or a TLS option, must not
// be completed with the agent's default endpoint and keys. It is refused with InvalidArgument
// (no endpoint and no keys: lvmd's rule), and the operator's proxy hears nothing.
func TestDefaultS3StoreNeverThroughACallersProxy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 4 << 30})
	b := newBucket(t, e)
	dir := t.TempDir()
	keyFile, secretFile := filepath.Join(dir, "id"), filepath.Join(dir, "secret")
	for f, v := range map[string]string{keyFile: b.srv.AccessKeyID, secretFile: b.srv.SecretAccessKey} {
		if err := os.WriteFile(f, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a := e.start(t, e.config(t, func(c *app.Config) {
		c.DefaultS3Endpoint, c.DefaultS3AccessKeyFile, c.DefaultS3SecretKeyFile = b.srv.Endpoint, keyFile, secretFile
	}))
	ctx := ctxT(t)
	if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "src", SizeGb: 1}); err != nil {
		t.Fatal(err)
	}
	// The operator's proxy: it records what reaches it and forwards nothing.
	var mu sync.Mutex
	var heard []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		heard = append(heard, r.Method+" "+r.URL.String()+" authorization: "+r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusBadGateway)
	}))
	defer proxy.Close()
	leaked := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(heard, "\n")
	}
	path := b.name + "/proxied/src"
	for name, s := range map[string]*lvmdpb.DataSource_S3{
		"http_proxy":  {Path: path, HttpProxy: proxy.URL},
		"https_proxy": {Path: path, HttpsProxy: proxy.URL},
		"verify_tls":  {Path: path, VerifyTls: true},
	} {
		ds := &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: s}}
		_, err := a.lv.CreateBackup(ctx, &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{Name: "bk-" + strings.ReplaceAll(name, "_", "-"), VolumeHandle: "src", DataSource: ds}})
		if err == nil {
			deadline := time.Now().Add(15 * time.Second)
			for leaked() == "" && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			t.Fatalf("a backup naming %s was completed with the default store; the caller's proxy heard:\n%s", name, leaked())
		}
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "data_source.s3.") {
			t.Fatalf("backup naming %s: %v, want InvalidArgument naming data_source.s3.*", name, err)
		}
		_, err = a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "restored", SizeGb: 1,
			DataSource: &lvmdpb.DataSource{SynchronousRestore: true, Type: ds.Type}})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "data_source.s3.") {
			t.Fatalf("restore naming %s: %v, want InvalidArgument naming data_source.s3.*", name, err)
		}
	}
	if got := leaked(); got != "" {
		t.Fatalf("the caller's proxy heard:\n%s", got)
	}
}
